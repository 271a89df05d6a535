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

import functools
import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Final

from catalog.loaded import LoadedCatalog, ProfileSignals
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

# The weights in thousandths of a point (each weight has at most three decimals).
_MILLI: Final = 1000
_TITLE_MILLI: Final = round(TITLE_WEIGHT * _MILLI)
_DESCRIPTION_MILLI: Final = round(DESCRIPTION_WEIGHT * _MILLI)
_DOMAIN_MILLI: Final = round(DOMAIN_WEIGHT * _MILLI)
_ROLE_MILLI: Final = round(ROLE_WEIGHT * _MILLI)
_TASK_TYPE_MILLI: Final = round(TASK_TYPE_WEIGHT * _MILLI)

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

# The lowest number of points for each level above low.
_RISK_CRITICAL: Final = 6
_RISK_HIGH: Final = 3
_RISK_MEDIUM: Final = 1

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
# ASCII bytes: letters to lower case, digits kept, every other ASCII character to a space.
_ASCII_WORD_BYTES: Final = bytes(
    (ord(chr(c).lower()) if chr(c).isalnum() else 0x20) if c < 128 else c for c in range(256)
)
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
    return text.encode("ascii").translate(_ASCII_WORD_BYTES).decode("ascii").split()


def _canonical(text: str) -> str:
    """The words of ``text`` joined by single spaces (how signals and phrases are compared)."""
    if text.isascii():  # the ASCII case of _words, inlined: domains and roles are short and frequent
        return " ".join(text.encode("ascii").translate(_ASCII_WORD_BYTES).decode("ascii").split())
    return " ".join(_words(text))


# A work item's domain and roles are short labels from a small vocabulary: their canonical forms are
# kept in a bounded cache instead of being worked out again on every route.
_label: Final = functools.lru_cache(maxsize=1024)(_canonical)


class _Phrases:
    """A list of phrases prepared for whole-word matching: every spelling that means one of them, and
    which of them lie inside longer ones. Built once per phrase list; which phrases lie inside a longer
    one is worked out for that longer phrase the first time a text has it."""

    def __init__(self, phrases: Iterable[str]) -> None:
        """``phrases`` in canonical form (:func:`_canonical`); empty ones and repeats are skipped."""
        canonical_phrases = list(dict.fromkeys(filter(None, phrases)))
        # Every spelling (a phrase, or the phrase with its last word in a plural form) → the phrases it
        # spells. A text that spells a phrase exactly means that phrase, never another phrase's plural
        # (``cis`` is the benchmark, not two ``ci`` systems), so plural forms skip exact spellings.
        exact = set(canonical_phrases)
        spellings: dict[str, list[str]] = {}
        spelled_by = spellings.get
        for canonical in canonical_phrases:
            if (spelled := spelled_by(canonical)) is None:
                spellings[canonical] = [canonical]
            else:
                spelled.append(canonical)
            for spelling in _plural_spellings(canonical):
                if spelling not in exact:
                    if (spelled := spelled_by(spelling)) is None:
                        spellings[spelling] = [canonical]
                    else:
                        spelled.append(canonical)
        self.spellings: Final[Mapping[str, list[str]]] = spellings
        # Only a phrase of two or more words can hide another.
        self._hiding = frozenset(phrase for phrase in canonical_phrases if " " in phrase)
        self._inner: dict[str, frozenset[str]] = {}

    def _inside(self, phrase: str) -> frozenset[str]:
        """The other phrases spelled by a shorter run of words inside a spelling of ``phrase`` (one of
        these phrases of two or more words): the phrases it hides."""
        spellings = self.spellings
        inner: set[str] = set()
        for spelling in (phrase, *_plural_spellings(phrase)):
            if phrase not in spellings.get(spelling, ()):
                continue  # a plural form that is another phrase's exact spelling
            for run in _inner_runs(spelling.split()):
                inner.update(spellings.get(run, ()))
        inner.discard(phrase)
        # Routes may run in several threads: at worst two work out the same set.
        found = self._inner[phrase] = frozenset(inner)
        return found

    def without_shadowed(
        self, hits: set[str], context: set[str], more_context: set[str] | None = None
    ) -> set[str]:
        """``hits`` minus every phrase that lies inside a longer phrase found in ``context`` (or in
        ``more_context``). Returns ``hits`` itself when nothing is hidden."""
        hiding = self._hiding
        if hiding.isdisjoint(context) and (not more_context or hiding.isdisjoint(more_context)):
            return hits
        phrases = hiding.intersection(context)
        if more_context:
            phrases |= hiding.intersection(more_context)
        known = self._inner
        hidden: set[str] = set()
        for phrase in phrases:
            if (inner := known.get(phrase)) is None:
                inner = self._inside(phrase)
            hidden.update(inner)
        if hidden.isdisjoint(hits):
            return hits
        return hits.difference(hidden)


def _plural_spellings(phrase: str) -> list[str]:
    """``phrase`` with its last word in the plural forms it also matches: ``+s``, ``+es`` and, after a
    consonant, ``y`` → ``ies`` (none for a last word under 3 letters)."""
    last = phrase.rpartition(" ")[2]
    if len(last) < 3:
        return []
    forms = [phrase + "s", phrase + "es"]
    if last[-1] == "y" and last[-2] not in _VOWELS:
        forms.append(phrase[:-1] + "ies")
    return forms


def _inner_runs(words: list[str]) -> list[str]:
    """Every run of ``words`` shorter than all of them, joined by spaces."""
    count = len(words)
    if count == 2:
        return words
    return [
        " ".join(words[begin : begin + size]) for size in range(1, count) for begin in range(count - size + 1)
    ]


# What one word of a text can start: the keywords and the risk terms it spells alone, and for each
# second word that continues a longer spelling, the padded longer spellings (``" word second … "``)
# with the phrase each spells and whether that phrase is a risk term.
_Entry = tuple[Sequence[str], Sequence[str], frozenset[str] | None, dict[str, list[tuple[str, str, bool]]]]


class _Entries(dict[str, _Entry | None]):
    """A word's table entry, made by ``make`` on its first lookup and kept. Routes may run in several
    threads: at worst two make the same entry."""

    def __init__(self, make: Callable[[str], _Entry | None]) -> None:
        super().__init__()
        self._make = make

    def __missing__(self, word: str) -> _Entry | None:
        entry = self[word] = self._make(word)
        return entry


class _Matcher:
    """Finds a catalog's keywords and the risk terms in a text's words in one pass.

    One set intersection picks the text's words that spell a phrase alone or begin or continue a longer
    spelling, and one table lookup per picked word says what it spells. A longer spelling is looked for
    as a padded substring of the canonical text only when the text has both its first and its second
    word, and the canonical text is joined only then. Nothing is compiled per call.

    A word's table entry is made the first time a text has it: a route preview meets a few dozen of
    the catalog's words, and making entries for all of them would cost it more than its route."""

    def __init__(self, keywords: _Phrases, risk_terms: _Phrases) -> None:
        self._keywords = keywords.spellings
        self._risk_terms = risk_terms.spellings
        words: set[str] = set()
        # first word → (second word, spelling, is a risk term) of each spelling of two or more words
        starts: dict[str, list[tuple[str, str, bool]]] = {}
        for is_risk, spellings in ((False, self._keywords), (True, self._risk_terms)):
            for spelling in spellings:
                if " " not in spelling:
                    words.add(spelling)
                    continue
                first, _, rest = spelling.partition(" ")
                second = rest.partition(" ")[0]
                words.add(first)
                words.add(second)
                if (started := starts.get(first)) is None:
                    starts[first] = [(second, spelling, is_risk)]
                else:
                    started.append((second, spelling, is_risk))
        self._words = frozenset(words)
        self._starts = starts
        # A word that only continues a spelling has None: the lookup skips it.
        self._table = _Entries(self._entry)

    def _entry(self, word: str) -> _Entry | None:
        continuations: dict[str, list[tuple[str, str, bool]]] = {}
        for second, spelling, is_risk in self._starts.get(word, ()):
            targets = (self._risk_terms if is_risk else self._keywords)[spelling]
            padded = f" {spelling} "
            needles = [(padded, target, is_risk) for target in targets]
            if (continued := continuations.get(second)) is None:
                continuations[second] = needles
            else:
                continued.extend(needles)
        keywords = self._keywords.get(word, ())
        risk_terms = self._risk_terms.get(word, ())
        if not (keywords or risk_terms or continuations):
            return None
        return (keywords, risk_terms, frozenset(continuations) or None, continuations)

    def find(self, words: list[str]) -> tuple[set[str], set[str]]:
        """The keywords and the risk terms (canonical) occurring in ``words`` as whole words."""
        found = self._words.intersection(words)
        keyword_hits: set[str] = set()
        risk_hits: set[str] = set()
        padded = ""
        entries = filter(None, map(self._table.__getitem__, found))
        for keyword_targets, risk_targets, seconds, needles in entries:
            if keyword_targets:
                keyword_hits.update(keyword_targets)
            if risk_targets:
                risk_hits.update(risk_targets)
            if seconds is None or seconds.isdisjoint(found):
                continue
            if not padded:
                padded = f" {' '.join(words)} "
            for second in seconds.intersection(found):
                for needle, phrase, is_risk in needles[second]:
                    if needle in padded:
                        (risk_hits if is_risk else keyword_hits).add(phrase)
        return keyword_hits, risk_hits


class _ProfileWording:
    """How the reasons word one profile's matches, prepared on its first route as primary."""

    __slots__ = ("domains", "keywords", "roles", "routed", "task_types")

    def __init__(self, signals: ProfileSignals, keyword_label: Mapping[str, str]) -> None:
        me = signals.id
        ranks: dict[str, int] = {}
        for rank, keyword in enumerate(signals.keywords):
            if canonical := _canonical(keyword):
                ranks.setdefault(canonical, rank)
        # keyword (canonical) → (rank in the profile's list, keyword, quoted label): the order and
        # wording of the "title/description matches" reasons.
        self.keywords: Final = {k: (rank, k, f"'{keyword_label[k]}'") for k, rank in ranks.items()}
        # domain, role (canonical) → reason; task type → reason.
        self.domains: Final = {d: f"domain '{d}' fits {me}" for d in map(_canonical, signals.domains) if d}
        self.roles: Final = {r: f"role '{r}' fits {me}" for r in map(_canonical, signals.roles) if r}
        self.task_types: Final = {task: f"task type {task.value} fits {me}" for task in signals.task_types}
        # The routing reason before and after the score.
        self.routed: Final = (f"routed to {me} with score ", f"; reviewer {signals.reviewer} from catalog")


class _CompiledCatalog:
    """A catalog's routing signals, prepared once for fast matching; each profile's wording is
    prepared when it is first needed (a route names one primary)."""

    __slots__ = (
        "_keyword_label",
        "_signals",
        "_wording",
        "domains",
        "keyword_profiles",
        "keywords",
        "matcher",
        "reviewers",
        "roles",
        "task_type_profiles",
    )

    def __init__(self, catalog: LoadedCatalog) -> None:
        profiles = catalog.signals
        keyword_profiles: dict[str, list[str]] = {}
        keyword_label: dict[str, str] = {}
        domains: dict[str, list[str]] = {}
        roles: dict[str, list[str]] = {}
        for signals in profiles:
            me = signals.id
            for keyword in signals.keywords:
                if not (canonical := _canonical(keyword)):
                    continue
                if (owners := keyword_profiles.get(canonical)) is None:
                    keyword_profiles[canonical] = [me]
                    keyword_label[canonical] = keyword
                elif me not in owners:
                    owners.append(me)
            for table, values in ((domains, signals.domains), (roles, signals.roles)):
                for value in values:
                    if not (canonical := _canonical(value)):
                        continue
                    if (owners := table.get(canonical)) is None:
                        table[canonical] = [me]
                    elif me not in owners:
                        owners.append(me)
        self.keywords: Final = _Phrases(keyword_profiles)
        self.matcher: Final = _Matcher(self.keywords, _RISK_PHRASES)
        self.keyword_profiles: Final[Mapping[str, list[str]]] = keyword_profiles
        self.domains: Final[Mapping[str, list[str]]] = domains
        self.roles: Final[Mapping[str, list[str]]] = roles
        self.task_type_profiles: Final = {
            task: frozenset(p.id for p in profiles if task in p.task_types) for task in TaskType
        }
        # profile id → its independent reviewer
        self.reviewers: Final = {p.id: p.reviewer for p in profiles}
        self._signals = {p.id: p for p in profiles}
        self._keyword_label = keyword_label
        self._wording: dict[str, _ProfileWording] = {}

    def wording(self, profile: str) -> _ProfileWording:
        """The wording of ``profile``'s reasons (a profile of the catalog)."""
        wording = self._wording.get(profile)
        if wording is None:
            # Routes may run in several threads: at worst two build the same wording.
            wording = self._wording[profile] = _ProfileWording(self._signals[profile], self._keyword_label)
        return wording


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
        compiled = _CompiledCatalog(catalog)
        if len(_COMPILED) >= _COMPILED_LIMIT:
            del _COMPILED[next(iter(_COMPILED))]
        _COMPILED[id(catalog)] = (catalog, compiled)
        return compiled


_RISK_PHRASES: Final = _Phrases(map(_canonical, RISK_TERMS))
_RISK_ORDER: Final = {_canonical(term): rank for rank, term in enumerate(RISK_TERMS)}
# canonical term → (points, reason); terms worth 0 points give no reason.
_RISK_TERM_REASONS: Final = {
    _canonical(term): (points, f"text mentions '{_canonical(term)}' (risk +{points})")
    for term, points in RISK_TERMS.items()
}
# (flag, points, reason) in the order of RiskFlag.
_RISK_FLAG_REASONS: Final = tuple(
    (flag, RISK_FLAG_POINTS[flag], f"risk flag {flag.value} raises risk (+{RISK_FLAG_POINTS[flag]})")
    for flag in RiskFlag
)
_RISK_LEVEL_PREFIX: Final = {level: f"risk {level.value} from " for level in RiskLevel}


@functools.lru_cache(maxsize=1024)
def _fmt(value: float) -> str:
    """A score with at most three decimals and no trailing zeros (scores take few distinct values)."""
    return f"{value:.3f}".rstrip("0").rstrip(".")


def _confidence(top: float, runner_up: float) -> float:
    if top <= 0:
        return 0.0
    strength = top / (top + 3.0)
    separation = (top - runner_up) / top
    return strength * (0.5 + 0.5 * separation)


def _matched(hits: set[str], mine: dict[str, tuple[int, str, str]]) -> str:
    """The profile's keywords among ``hits``, quoted, in the profile's own order."""
    return ", ".join([entry[2] for entry in sorted([mine[k] for k in hits if k in mine])])


def _match_reasons(
    wording: _ProfileWording,
    title_hits: set[str],
    description_hits: set[str],
    domain: str,
    roles: tuple[str, ...],
    task_type: TaskType,
) -> list[str]:
    mine = wording.keywords
    reasons: list[str] = []
    if title_hits and (title := _matched(title_hits, mine)):
        reasons.append(f"title matches {title}")
    if description_hits and (description := _matched(description_hits, mine)):
        reasons.append(f"description matches {description}")
    if domain and (reason := wording.domains.get(domain)):
        reasons.append(reason)
    for role in roles:
        if reason := wording.roles.get(role):
            reasons.append(reason)
    if reason := wording.task_types.get(task_type):
        reasons.append(reason)
    return reasons


# The computed route before any override: primary, score, confidence, ranking (best first, as
# (score, profile)), reasons, and the ambiguity gap or None.
_Ranking = tuple[str, float, float, list[tuple[float, str]], list[str], str | None]


def _rank(
    item: WorkItem,
    title_found: set[str],
    description_found: set[str],
    catalog: LoadedCatalog,
    compiled: _CompiledCatalog,
) -> _Ranking:
    # Signals: the keywords found in each field (each counts once, in the title if it is there; a
    # keyword inside a longer keyword found in the title or description does not count), domain, roles.
    keywords = compiled.keywords
    title_hits = keywords.without_shadowed(title_found, title_found)
    description_hits = description_found
    if description_hits:
        description_hits = description_hits - title_hits
        if description_hits:
            description_hits = keywords.without_shadowed(description_hits, description_hits, title_hits)
    domain = item.domain
    if domain:
        domain = _label(domain)
    roles: tuple[str, ...] = ()
    if item.roles:
        roles = tuple(dict.fromkeys([_label(role) for role in item.roles]))

    # Score, in thousandths of a point: integer sums are exact, so a score needs no rounding.
    scores: dict[str, int] = {}
    get = scores.get
    keyword_profiles = compiled.keyword_profiles
    for keyword in title_hits:
        for profile in keyword_profiles[keyword]:
            scores[profile] = get(profile, 0) + _TITLE_MILLI
    for keyword in description_hits:
        for profile in keyword_profiles[keyword]:
            scores[profile] = get(profile, 0) + _DESCRIPTION_MILLI
    if domain:
        for profile in compiled.domains.get(domain, ()):
            scores[profile] = get(profile, 0) + _DOMAIN_MILLI
    for role in roles:
        for profile in compiled.roles.get(role, ()):
            scores[profile] = get(profile, 0) + _ROLE_MILLI
    task_type = item.task_type
    for profile in compiled.task_type_profiles[task_type].intersection(scores):
        scores[profile] += _TASK_TYPE_MILLI

    # Rank by score (highest first), then by id.
    ranked = [(-milli / _MILLI, profile) for milli, profile in sorted([(-m, p) for p, m in scores.items()])]
    top, leader = ranked[0] if ranked else (0.0, "")
    runner_up = ranked[1][0] if len(ranked) > 1 else 0.0
    margin = max(TIE_MARGIN, TIE_RATIO * top)
    confidence = _confidence(top, runner_up)

    if top >= MIN_SCORE and top - runner_up >= margin:
        wording = compiled.wording(leader)
        reasons = _match_reasons(wording, title_hits, description_hits, domain, roles, task_type)
        reasons.append(_fmt(top).join(wording.routed))
        return leader, top, round(confidence, 3), ranked, reasons, None

    _require_profile(catalog, compiled, FALLBACK_PROFILE)
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
        scores_text = ", ".join(f"{profile} {_fmt(score)}" for score, profile in ranked[: len(named)])
        detail = f"top matches are too close to choose ({scores_text})"
    reviewer = compiled.reviewers[FALLBACK_PROFILE]
    reasons = [
        detail,
        f"routed to {FALLBACK_PROFILE} to scope the work; reviewer {reviewer} from catalog",
    ]
    return FALLBACK_PROFILE, 0.0, round(confidence * 0.5, 3), ranked, reasons, ambiguity


def _risk(item: WorkItem, found: set[str], reasons: list[str]) -> RiskLevel:
    """The risk level of ``item``; each raising signal and the total are appended to ``reasons``."""
    points = 0
    flags = item.risk_flags
    if flags:
        for flag, flag_points, reason in _RISK_FLAG_REASONS:
            if flag in flags:
                points += flag_points
                reasons.append(reason)
    if found:
        found = _RISK_PHRASES.without_shadowed(found, found)
        for term in sorted(found, key=_RISK_ORDER.__getitem__) if len(found) > 1 else found:
            term_points, reason = _RISK_TERM_REASONS[term]
            if term_points:
                points += term_points
                reasons.append(reason)
    if points >= _RISK_CRITICAL:
        level = RiskLevel.CRITICAL
    elif points >= _RISK_HIGH:
        level = RiskLevel.HIGH
    elif points >= _RISK_MEDIUM:
        level = RiskLevel.MEDIUM
    else:
        level = RiskLevel.LOW
    reasons.append(f"{_RISK_LEVEL_PREFIX[level]}{points} point{'s' if points != 1 else ''}")
    return level


def _require_profile(catalog: LoadedCatalog, compiled: _CompiledCatalog, profile: str) -> None:
    if profile not in compiled.reviewers:
        raise NotFound(
            "unknown_profile",
            f"profile {profile!r} is not in catalog {catalog.version}; "
            "list the profiles with `specialists catalog`",
        )


def _check_override(override: RouteOverride, catalog: LoadedCatalog, compiled: _CompiledCatalog) -> None:
    if not override.reason.strip():
        raise InvalidInput(
            "override_reason_required",
            f"an override to {override.profile!r} needs a non-blank reason saying why",
        )
    _require_profile(catalog, compiled, override.profile)


def route(item: WorkItem, catalog: LoadedCatalog, *, override: RouteOverride | None = None) -> RouteDecision:
    """Route ``item`` to a primary profile and its independent reviewer.

    Deterministic: the same item, catalog and override give a byte-identical
    ``model_dump_json()``. Raises :class:`InvalidInput` (``override_reason_required``) for an override
    with a blank reason, and :class:`NotFound` (``unknown_profile``) for an override naming a profile
    the catalog does not have, or when a fallback route is needed and the catalog has no
    ``general-orchestrator``.
    """
    compiled = _compiled(catalog)
    if override is not None:
        _check_override(override, catalog, compiled)
    find = compiled.matcher.find
    title_keywords, risk_terms = find(_words(item.title))
    description_keywords: set[str] = set()
    if item.description:
        description_keywords, description_risk_terms = find(_words(item.description))
        if description_risk_terms:
            risk_terms |= description_risk_terms
    computed, score, confidence, ranked, reasons, ambiguity = _rank(
        item, title_keywords, description_keywords, catalog, compiled
    )
    risk = _risk(item, risk_terms, reasons)

    primary = computed
    if override is not None:
        primary = override.profile
        score = 0.0
        if primary == computed:
            reasons.append(f"operator override confirms computed primary {primary}")
        else:
            reasons.append(f"operator override selects {primary} instead of {computed}")
        reasons.append(f"operator override: {normalize_text(override.reason)}")

    gaps: list[str] = []
    if ambiguity is not None:
        gaps.append(ambiguity)
    if not item.evidence_refs:
        gaps.append(GAP_NO_EVIDENCE)
    task_type = item.task_type
    repo_alias = item.repo_alias
    if repo_alias is None and (
        task_type is TaskType.FIX or (task_type is TaskType.TEST and primary in CODE_PROFILES)
    ):
        gaps.append(GAP_NO_REPOSITORY)

    alternatives: list[dict[str, object]] = []
    for profile_score, profile in ranked:
        if profile != primary:
            alternatives.append({"profile": profile, "score": profile_score})
            if len(alternatives) == MAX_ALTERNATIVES:
                break

    return RouteDecision.model_validate(
        {
            "primary": primary,
            "reviewer": compiled.reviewers[primary],
            "confidence": confidence,
            "score": score,
            "risk": risk,
            "reasons": reasons,
            "alternatives": alternatives,
            "evidence_gaps": gaps,
            "repo_alias": repo_alias,
            "task_type": task_type,
            "override": override,
        }
    )
