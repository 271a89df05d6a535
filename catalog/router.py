"""The deterministic router: a work item and a catalog in, a :class:`RouteDecision` out.

Text preparation
    Title, description, domain and roles go through :func:`catalog.normalize.normalize_text` (NFKC,
    invisible characters removed), are case-folded, and every run of non-word characters (punctuation,
    hyphens, underscores, whitespace) becomes one space. Catalog keywords, domains and roles are prepared
    the same way once per catalog, so ``Application-Security``, ``application security`` and a
    full-width ``ＡＰＰＳＥＣ`` all meet the same signal. Keywords match whole words only; a keyword's last
    word also matches its plural (``index`` → ``indexes``, ``query`` → ``queries``). When a matched
    keyword lies inside a longer matched keyword (``sql`` in ``sql injection``), only the longer one
    counts.

Score of a profile (each distinct keyword counts once, in the title if it is there)
    ===========================  =======
    keyword in the title         3.0
    keyword in the description   1.5
    work item domain matches     2.5
    each work item role matches  2.0
    task type is one it takes    0.5  (only added to a profile that already has another signal)
    ===========================  =======

    Profiles are ranked by score, then by id. The best profile is the primary when its score is at
    least 2.0 and it leads the runner-up by at least ``max(1.0, 10 % of its score)``. Otherwise the work
    item is routed to ``general-orchestrator`` for scoping, with an ``ambiguous scope`` evidence gap that
    names the close candidates or says that no signal was found; the router never invents a scope.
    ``score`` is the primary's score (0 when routed by fallback or override). ``confidence`` is
    ``strength × (0.5 + 0.5 × separation)`` with ``strength = top / (top + 3)`` and ``separation =
    (top − runner-up) / top``; it is halved for a fallback route. Scores and confidence are rounded to
    three decimals, so the same input always gives byte-identical JSON.

Risk (points add up; each raising signal is listed in ``reasons``)
    Flags: ``production`` 2, ``customer_data`` 2, ``credentials`` 3, ``data_loss`` 3,
    ``external_exposure`` 2, ``regulated`` 1. Text terms in title or description, each counted once:
    see :data:`RISK_TERMS` (``ransomware`` 4; ``breach``, ``compromised``, ``exfiltration``,
    ``data loss``, leaked keys or credentials 3; outage, production incident or impact, customer or
    personal data, credentials, secrets, exploits 2; ``production``, ``vulnerability``, ``cve``,
    regulated-data terms 1; a few phrases such as ``indicators of compromise`` count 0 and hide the
    term they contain). Level: 0 low, 1–2 medium, 3–5 high, 6 or more critical.

Evidence gaps (stable strings)
    ``ambiguous scope: ...``; ``no evidence refs``; ``no repository alias for a code change`` (task type
    ``fix``, or ``test`` for a profile that works on code, without ``repo_alias``).

Override
    An operator may name the primary profile with a non-blank reason. The computed ranking, confidence,
    risk and gaps are kept for information; the reviewer comes from the catalog entry of the chosen
    profile. An override never grants permissions or changes the model: the router has neither.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import pairwise
from typing import Final

from catalog.loaded import LoadedCatalog
from catalog.normalize import normalize_text
from contracts.enums import RiskFlag, RiskLevel, TaskType
from contracts.errors import InvalidInput, NotFound
from contracts.routing import RouteDecision, RouteOverride
from contracts.work_item import WorkItem

FALLBACK_PROFILE: Final = "general-orchestrator"

TITLE_WEIGHT: Final = 3.0
DESCRIPTION_WEIGHT: Final = 1.5
DOMAIN_WEIGHT: Final = 2.5
ROLE_WEIGHT: Final = 2.0
TASK_TYPE_WEIGHT: Final = 0.5

MIN_SCORE: Final = 2.0
TIE_MARGIN: Final = 1.0
TIE_RATIO: Final = 0.1
MAX_ALTERNATIVES: Final = 5
MAX_NAMED_CANDIDATES: Final = 3

RISK_FLAG_POINTS: Final[Mapping[RiskFlag, int]] = {
    RiskFlag.PRODUCTION: 2,
    RiskFlag.CUSTOMER_DATA: 2,
    RiskFlag.CREDENTIALS: 3,
    RiskFlag.DATA_LOSS: 3,
    RiskFlag.EXTERNAL_EXPOSURE: 2,
    RiskFlag.REGULATED: 1,
}

RISK_TERMS: Final[Mapping[str, int]] = {
    "ransomware": 4,
    "breach": 3,
    "breached": 3,
    "compromise": 3,
    "compromised": 3,
    "exfiltration": 3,
    "exfiltrated": 3,
    "data loss": 3,
    "lost data": 3,
    "zero day": 3,
    "actively exploited": 3,
    "leaked key": 3,
    "leaked api key": 3,
    "leaked credential": 3,
    "leaked secret": 3,
    "leaked token": 3,
    "outage": 2,
    "downtime": 2,
    "production incident": 2,
    "production impact": 2,
    "customer data": 2,
    "personal data": 2,
    "pii": 2,
    "credential": 2,
    "secret": 2,
    "api key": 2,
    "private key": 2,
    "exploit": 2,
    "exploited": 2,
    "publicly exposed": 2,
    "internet facing": 2,
    "production": 1,
    "vulnerability": 1,
    "vulnerabilities": 1,
    "cve": 1,
    "regulated": 1,
    "hipaa": 1,
    "gdpr": 1,
    "cardholder data": 1,
    # Phrases that name a risk term without reporting the risk itself: they count 0 and hide the term.
    "indicators of compromise": 0,
    "compromise assessment": 0,
}

# (level, lowest number of points for it), highest first.
_RISK_THRESHOLDS: Final = (
    (RiskLevel.CRITICAL, 6),
    (RiskLevel.HIGH, 3),
    (RiskLevel.MEDIUM, 1),
)

# Profiles whose work is a change to code: a ``test`` task for them needs a repository too.
CODE_PROFILES: Final = frozenset(
    {
        "application-security-engineer",
        "backend-architect",
        "database-optimizer",
        "devops-automator",
        "frontend-developer",
        "test-automation-engineer",
    }
)

GAP_NO_EVIDENCE: Final = "no evidence refs"
GAP_NO_REPOSITORY: Final = "no repository alias for a code change"
GAP_AMBIGUOUS_PREFIX: Final = "ambiguous scope: "
GAP_NO_SIGNAL: Final = GAP_AMBIGUOUS_PREFIX + "no clear routing signal"

_NON_WORD = re.compile(r"[\W_]+")
_ASCII_SEPARATORS: Final = str.maketrans({chr(c): " " for c in range(128) if not chr(c).isalnum()})
_VOWELS = frozenset("aeiou")


def _words(text: str) -> list[str]:
    """The words of ``text``: normalised, case-folded, split at every run of non-word characters.

    ASCII text skips :func:`normalize_text`: NFKC leaves ASCII unchanged and ASCII holds no invisible
    character, so its only effects (control characters and whitespace runs become one space) are already
    covered by the split. The result is the same; the shortcut keeps routing fast.
    """
    if not text.isascii():
        text = normalize_text(text).casefold()
        if not text.isascii():
            return _NON_WORD.sub(" ", text).split()
    return text.lower().translate(_ASCII_SEPARATORS).split()


def _canonical(text: str) -> str:
    """The words of ``text`` joined by single spaces (how signals and phrases are compared)."""
    return " ".join(_words(text))


@dataclass(frozen=True, slots=True)
class _Text:
    """Canonical text padded with spaces (for whole-phrase search) and its words and word pairs."""

    padded: str
    grams: frozenset[str]


def _prepare(text: str) -> _Text:
    words = _words(text)
    return _Text(" " + " ".join(words) + " ", frozenset((*words, *map(" ".join, pairwise(words)))))


def _word_forms(word: str) -> tuple[str, ...]:
    """The word itself, then the plural forms it also matches (none for words under 3 letters)."""
    if len(word) < 3:
        return (word,)
    forms = [word, word + "s", word + "es"]
    if word.endswith("y") and word[-2] not in _VOWELS:
        forms.append(word[:-1] + "ies")
    return tuple(forms)


class _PhraseIndex:
    """Whole-word lookup of many phrases at once: one set intersection with the text's words and word
    pairs finds every phrase of one or two words; a longer phrase is searched for only when its first
    two words occur together. Built once per phrase list; nothing is compiled per call."""

    def __init__(self, phrases: Iterable[str]) -> None:
        canonical_phrases: list[str] = []
        for phrase in phrases:
            canonical = _canonical(phrase)
            if canonical and canonical not in canonical_phrases:
                canonical_phrases.append(canonical)
        # Every spelling (a phrase, or the phrase with its last word in a plural form) → the phrases it
        # spells. A text that spells a phrase exactly means that phrase, never another phrase's plural
        # (``cis`` is the benchmark, not two ``ci`` systems), so plural forms skip exact spellings.
        exact = set(canonical_phrases)
        spellings: dict[str, list[str]] = {}
        for canonical in canonical_phrases:
            words = canonical.split()
            for form in _word_forms(words[-1]):
                spelling = " ".join([*words[:-1], form])
                if form == words[-1] or spelling not in exact:
                    spellings.setdefault(spelling, []).append(canonical)
        self._short: dict[str, tuple[str, ...]] = {}
        long: dict[str, list[tuple[str, str]]] = {}
        longer: dict[str, set[str]] = {canonical: set() for canonical in canonical_phrases}
        for spelling, targets in spellings.items():
            words = spelling.split()
            if len(words) <= 2:
                self._short[spelling] = tuple(targets)
            else:
                long.setdefault(" ".join(words[:2]), []).extend((f" {spelling} ", t) for t in targets)
            # A phrase spelled by a shorter run of words inside this spelling is hidden by it.
            for size in range(1, len(words)):
                for begin in range(len(words) - size + 1):
                    for inner in spellings.get(" ".join(words[begin : begin + size]), ()):
                        longer[inner].update(t for t in targets if t != inner)
        self._long = {pair: tuple(needles) for pair, needles in long.items()}
        self._keys = frozenset(self._short) | frozenset(self._long)
        self._longer = {phrase: frozenset(others) for phrase, others in longer.items()}

    def find(self, text: _Text) -> set[str]:
        """Canonical phrases occurring in ``text`` as whole words."""
        hits: set[str] = set()
        for gram in text.grams & self._keys:
            short = self._short.get(gram)
            if short is not None:
                hits.update(short)
            for needle, canonical in self._long.get(gram, ()):
                if needle in text.padded:
                    hits.add(canonical)
        return hits

    def without_shadowed(self, hits: set[str], context: set[str]) -> set[str]:
        """``hits`` minus every phrase that lies inside a longer phrase found in ``context``."""
        if len(context) < 2:
            return hits
        return {hit for hit in hits if not (self._longer[hit] & context)}


@dataclass(frozen=True)
class _CompiledCatalog:
    """A catalog's routing signals, prepared once for fast matching."""

    keywords: _PhraseIndex
    keyword_profiles: dict[str, tuple[str, ...]]
    keyword_label: dict[str, str]
    keyword_rank: dict[tuple[str, str], int]
    domains: dict[str, tuple[str, ...]]
    roles: dict[str, tuple[str, ...]]
    task_type_profiles: dict[TaskType, frozenset[str]]


def _compile(catalog: LoadedCatalog) -> _CompiledCatalog:
    keyword_profiles: dict[str, list[str]] = {}
    keyword_label: dict[str, str] = {}
    keyword_rank: dict[tuple[str, str], int] = {}
    domains: dict[str, list[str]] = {}
    roles: dict[str, list[str]] = {}
    all_keywords: list[str] = []
    for profile in catalog.file.profiles:
        signals = profile.routing
        for rank, keyword in enumerate(signals.keywords):
            canonical = _canonical(keyword)
            if not canonical:
                continue
            all_keywords.append(keyword)
            keyword_label.setdefault(canonical, keyword)
            keyword_rank.setdefault((profile.id, canonical), rank)
            owners = keyword_profiles.setdefault(canonical, [])
            if profile.id not in owners:
                owners.append(profile.id)
        for table, values in ((domains, signals.domains), (roles, signals.roles)):
            for value in values:
                owners = table.setdefault(_canonical(value), [])
                if profile.id not in owners:
                    owners.append(profile.id)
    return _CompiledCatalog(
        keywords=_PhraseIndex(all_keywords),
        keyword_profiles={k: tuple(v) for k, v in keyword_profiles.items()},
        keyword_label=keyword_label,
        keyword_rank=keyword_rank,
        domains={k: tuple(v) for k, v in domains.items() if k},
        roles={k: tuple(v) for k, v in roles.items() if k},
        task_type_profiles={
            task: frozenset(p.id for p in catalog.file.profiles if task in p.routing.task_types)
            for task in TaskType
        },
    )


_COMPILED: dict[int, tuple[LoadedCatalog, _CompiledCatalog]] = {}
_COMPILED_LIMIT: Final = 8
_COMPILED_LOCK: Final = threading.Lock()


def _compiled(catalog: LoadedCatalog) -> _CompiledCatalog:
    """The compiled form of ``catalog``, built on first use. Keyed by object identity (the entry keeps
    the catalog alive, so an id is never reused while cached) and bounded to a few catalogs; activities
    may route from several threads, so a miss is handled under a lock."""
    entry = _COMPILED.get(id(catalog))
    if entry is not None and entry[0] is catalog:
        return entry[1]
    with _COMPILED_LOCK:
        entry = _COMPILED.get(id(catalog))
        if entry is not None and entry[0] is catalog:
            return entry[1]
        compiled = _compile(catalog)
        if len(_COMPILED) >= _COMPILED_LIMIT:
            del _COMPILED[next(iter(_COMPILED))]
        _COMPILED[id(catalog)] = (catalog, compiled)
        return compiled


_RISK_INDEX: Final = _PhraseIndex(RISK_TERMS)
_RISK_POINTS: Final = {_canonical(term): points for term, points in RISK_TERMS.items()}
_RISK_ORDER: Final = {_canonical(term): rank for rank, term in enumerate(RISK_TERMS)}


@dataclass(frozen=True, slots=True)
class _Signals:
    """The work item's signals that met the catalog: keywords per field, domain and roles."""

    title: set[str]
    description: set[str]
    domain: str
    roles: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _Ranking:
    """The computed route before any override."""

    primary: str
    score: float
    confidence: float
    ranked: list[tuple[float, str]]
    reasons: list[str]
    ambiguity: str | None


def _signals(item: WorkItem, title: _Text, description: _Text | None, compiled: _CompiledCatalog) -> _Signals:
    index = compiled.keywords
    title_hits = index.find(title)
    title_hits = index.without_shadowed(title_hits, title_hits)
    description_hits: set[str] = set()
    if description is not None:
        description_hits = index.find(description) - title_hits
        description_hits = index.without_shadowed(description_hits, title_hits | description_hits)
    domain = _canonical(item.domain) if item.domain else ""
    roles = tuple(dict.fromkeys(_canonical(role) for role in item.roles))
    return _Signals(title_hits, description_hits, domain, roles)


def _score(item: WorkItem, signals: _Signals, compiled: _CompiledCatalog) -> dict[str, float]:
    scores: dict[str, float] = {}
    get = scores.get
    for hits, weight in ((signals.title, TITLE_WEIGHT), (signals.description, DESCRIPTION_WEIGHT)):
        for keyword in hits:
            for profile in compiled.keyword_profiles[keyword]:
                scores[profile] = get(profile, 0.0) + weight
    for profile in compiled.domains.get(signals.domain, ()):
        scores[profile] = get(profile, 0.0) + DOMAIN_WEIGHT
    for role in signals.roles:
        for profile in compiled.roles.get(role, ()):
            scores[profile] = get(profile, 0.0) + ROLE_WEIGHT
    takers = compiled.task_type_profiles[item.task_type]
    for profile in takers.intersection(scores):
        scores[profile] += TASK_TYPE_WEIGHT
    return scores


def _fmt(value: float) -> str:
    return f"{value:.3f}".rstrip("0").rstrip(".")


def _match_reasons(profile: str, signals: _Signals, item: WorkItem, compiled: _CompiledCatalog) -> list[str]:
    def matched(hits: set[str]) -> str:
        mine = [k for k in hits if profile in compiled.keyword_profiles[k]]
        mine.sort(key=lambda k: (compiled.keyword_rank[profile, k], k))
        return ", ".join(f"'{compiled.keyword_label[k]}'" for k in mine)

    reasons: list[str] = []
    if title := matched(signals.title):
        reasons.append(f"title matches {title}")
    if description := matched(signals.description):
        reasons.append(f"description matches {description}")
    if profile in compiled.domains.get(signals.domain, ()):
        reasons.append(f"domain '{signals.domain}' fits {profile}")
    reasons.extend(
        f"role '{role}' fits {profile}" for role in signals.roles if profile in compiled.roles.get(role, ())
    )
    if profile in compiled.task_type_profiles[item.task_type]:
        reasons.append(f"task type {item.task_type.value} fits {profile}")
    return reasons


def _confidence(top: float, runner_up: float) -> float:
    if top <= 0:
        return 0.0
    strength = top / (top + 3.0)
    separation = (top - runner_up) / top
    return strength * (0.5 + 0.5 * separation)


def _rank(item: WorkItem, title: _Text, description: _Text | None, catalog: LoadedCatalog) -> _Ranking:
    compiled = _compiled(catalog)
    signals = _signals(item, title, description, compiled)
    ranked = sorted(
        ((round(score, 3), profile) for profile, score in _score(item, signals, compiled).items()),
        key=lambda entry: (-entry[0], entry[1]),
    )
    top, leader = ranked[0] if ranked else (0.0, "")
    runner_up = ranked[1][0] if len(ranked) > 1 else 0.0
    margin = max(TIE_MARGIN, TIE_RATIO * top)
    confidence = _confidence(top, runner_up)

    if top >= MIN_SCORE and top - runner_up >= margin:
        reviewer = catalog.profiles[leader].reviewer
        reasons = _match_reasons(leader, signals, item, compiled)
        reasons.append(f"routed to {leader} with score {_fmt(top)}; reviewer {reviewer} from catalog")
        return _Ranking(leader, top, round(confidence, 3), ranked, reasons, None)

    _require_profile(catalog, FALLBACK_PROFILE)
    if top < MIN_SCORE:
        ambiguity = GAP_NO_SIGNAL
        detail = f"no profile reached the routing threshold {_fmt(MIN_SCORE)}"
        if ranked:
            detail += f" (best: {leader} {_fmt(top)})"
    else:
        close = [profile for score, profile in ranked if top - score < margin]
        named = close[:MAX_NAMED_CANDIDATES]
        listed = ", ".join(named[:-1]) + " and " + named[-1]
        if len(close) > len(named):
            listed = ", ".join(named) + " and others"
        ambiguity = f"{GAP_AMBIGUOUS_PREFIX}{listed} match about equally"
        scores = ", ".join(f"{profile} {_fmt(score)}" for score, profile in ranked[: len(named)])
        detail = f"top matches are too close to choose ({scores})"
    reviewer = catalog.profiles[FALLBACK_PROFILE].reviewer
    reasons = [
        detail,
        f"routed to {FALLBACK_PROFILE} to scope the work; reviewer {reviewer} from catalog",
    ]
    return _Ranking(FALLBACK_PROFILE, 0.0, round(confidence * 0.5, 3), ranked, reasons, ambiguity)


def _risk(item: WorkItem, title: _Text, description: _Text | None) -> tuple[RiskLevel, list[str]]:
    points = 0
    reasons: list[str] = []
    for flag in RiskFlag:
        if flag in item.risk_flags:
            points += RISK_FLAG_POINTS[flag]
            reasons.append(f"risk flag {flag.value} raises risk (+{RISK_FLAG_POINTS[flag]})")
    hits = _RISK_INDEX.find(title)
    if description is not None:
        hits |= _RISK_INDEX.find(description)
    for term in sorted(_RISK_INDEX.without_shadowed(hits, hits), key=_RISK_ORDER.__getitem__):
        if _RISK_POINTS[term]:
            points += _RISK_POINTS[term]
            reasons.append(f"text mentions '{term}' (risk +{_RISK_POINTS[term]})")
    level = next((lvl for lvl, least in _RISK_THRESHOLDS if points >= least), RiskLevel.LOW)
    reasons.append(f"risk {level.value} from {points} point{'s' if points != 1 else ''}")
    return level, reasons


def _require_profile(catalog: LoadedCatalog, profile: str) -> None:
    if profile not in catalog.profiles:
        raise NotFound(
            "unknown_profile",
            f"profile {profile!r} is not in catalog {catalog.version}; "
            "list the profiles with `specialists catalog`",
        )


def _check_override(override: RouteOverride, catalog: LoadedCatalog) -> None:
    if not override.reason.strip():
        raise InvalidInput(
            "override_reason_required",
            f"an override to {override.profile!r} needs a non-blank reason saying why",
        )
    _require_profile(catalog, override.profile)


def route(item: WorkItem, catalog: LoadedCatalog, *, override: RouteOverride | None = None) -> RouteDecision:
    """Route ``item`` to a primary profile and its independent reviewer.

    Deterministic: the same item, catalog and override give a byte-identical
    ``model_dump_json()``. Raises :class:`InvalidInput` (``override_reason_required``) for an override
    with a blank reason, and :class:`NotFound` (``unknown_profile``) for an override naming a profile
    the catalog does not have, or when a fallback route is needed and the catalog has no
    ``general-orchestrator``.
    """
    if override is not None:
        _check_override(override, catalog)
    title = _prepare(item.title)
    description = _prepare(item.description) if item.description else None
    ranking = _rank(item, title, description, catalog)
    risk, risk_reasons = _risk(item, title, description)

    primary = ranking.primary
    score = ranking.score
    reasons = [*ranking.reasons, *risk_reasons]
    if override is not None:
        primary = override.profile
        score = 0.0
        if primary == ranking.primary:
            reasons.append(f"operator override confirms computed primary {primary}")
        else:
            reasons.append(f"operator override selects {primary} instead of {ranking.primary}")
        reasons.append(f"operator override: {normalize_text(override.reason)}")

    gaps: list[str] = []
    if ranking.ambiguity is not None:
        gaps.append(ranking.ambiguity)
    if not item.evidence_refs:
        gaps.append(GAP_NO_EVIDENCE)
    if item.repo_alias is None and (
        item.task_type is TaskType.FIX or (item.task_type is TaskType.TEST and primary in CODE_PROFILES)
    ):
        gaps.append(GAP_NO_REPOSITORY)

    alternatives = [
        {"profile": profile, "score": profile_score}
        for profile_score, profile in ranking.ranked
        if profile != primary
    ][:MAX_ALTERNATIVES]

    return RouteDecision.model_validate(
        {
            "primary": primary,
            "reviewer": catalog.profiles[primary].reviewer,
            "confidence": ranking.confidence,
            "score": score,
            "risk": risk,
            "reasons": reasons,
            "alternatives": alternatives,
            "evidence_gaps": gaps,
            "repo_alias": item.repo_alias,
            "task_type": item.task_type,
            "override": override,
        }
    )
