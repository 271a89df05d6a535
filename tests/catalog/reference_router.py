"""The routing rules of :mod:`catalog.router` written the plain way, as a test oracle.

Every spelling of every phrase is searched for in the padded canonical text, scores are summed as
floats and rounded, and every reason is formatted where it is used. Nothing is prepared per catalog and
nothing is cached, so this is slow; :mod:`tests.catalog.test_router_reference` checks that the router,
which prepares its matchers once per catalog, gives byte-identical decisions.
"""

from __future__ import annotations

from catalog.loaded import LoadedCatalog
from catalog.normalize import normalize_text
from catalog.router import (
    CODE_PROFILES,
    DESCRIPTION_WEIGHT,
    DOMAIN_WEIGHT,
    FALLBACK_PROFILE,
    GAP_AMBIGUOUS_PREFIX,
    GAP_NO_EVIDENCE,
    GAP_NO_REPOSITORY,
    GAP_NO_SIGNAL,
    MAX_ALTERNATIVES,
    MAX_NAMED_CANDIDATES,
    MIN_SCORE,
    RISK_FLAG_POINTS,
    RISK_TERMS,
    ROLE_WEIGHT,
    TASK_TYPE_WEIGHT,
    TIE_MARGIN,
    TIE_RATIO,
    TITLE_WEIGHT,
)
from contracts.enums import RiskFlag, RiskLevel, TaskType
from contracts.errors import InvalidInput, NotFound
from contracts.routing import RouteDecision, RouteOverride
from contracts.work_item import WorkItem


def canonical(text: str) -> str:
    """NFKC and invisible characters removed, case-folded, every non-alphanumeric run one space."""
    folded = normalize_text(text).casefold()
    return " ".join("".join(c if c.isalnum() else " " for c in folded).split())


def _forms(word: str) -> list[str]:
    if len(word) < 3:
        return [word]
    forms = [word, word + "s", word + "es"]
    if word.endswith("y") and word[-2] not in "aeiou":
        forms.append(word[:-1] + "ies")
    return forms


def spellings(phrases: list[str]) -> dict[str, list[str]]:
    """Canonical phrase → its spellings: itself, and its last word's plurals that are no other phrase."""
    exact = list(dict.fromkeys(c for c in map(canonical, phrases) if c))
    known = set(exact)
    result: dict[str, list[str]] = {}
    for phrase in exact:
        words = phrase.split()
        result[phrase] = [
            spelled
            for form in _forms(words[-1])
            if (spelled := " ".join([*words[:-1], form])) == phrase or spelled not in known
        ]
    return result


def found(spelled: dict[str, list[str]], text: str) -> set[str]:
    """The phrases with a spelling that occurs in ``text`` as whole words."""
    padded = f" {canonical(text)} "
    return {phrase for phrase, forms in spelled.items() if any(f" {s} " in padded for s in forms)}


def _inside(inner: list[str], outer: list[str]) -> bool:
    """Some spelling of ``inner`` is a shorter run of words inside some spelling of ``outer``."""
    for long in outer:
        words = long.split()
        runs = {
            " ".join(words[begin : begin + size])
            for size in range(1, len(words))
            for begin in range(len(words) - size + 1)
        }
        if runs & set(inner):
            return True
    return False


def unshadowed(spelled: dict[str, list[str]], hits: set[str], context: set[str]) -> set[str]:
    return {
        hit
        for hit in hits
        if not any(other != hit and _inside(spelled[hit], spelled[other]) for other in context)
    }


def _fmt(value: float) -> str:
    return f"{value:.3f}".rstrip("0").rstrip(".")


def _require(catalog: LoadedCatalog, profile: str) -> None:
    if profile not in catalog.profiles:
        raise NotFound(
            "unknown_profile",
            f"profile {profile!r} is not in catalog {catalog.version}; "
            "list the profiles with `specialists catalog`",
        )


def route(item: WorkItem, catalog: LoadedCatalog, override: RouteOverride | None = None) -> RouteDecision:
    if override is not None:
        if not override.reason.strip():
            raise InvalidInput(
                "override_reason_required",
                f"an override to {override.profile!r} needs a non-blank reason saying why",
            )
        _require(catalog, override.profile)
    profiles = catalog.file.profiles

    # Signals.
    owned = {p.id: [canonical(k) for k in p.routing.keywords] for p in profiles}
    label: dict[str, str] = {}
    for profile in profiles:
        for keyword, c in zip(profile.routing.keywords, owned[profile.id], strict=True):
            if c:
                label.setdefault(c, keyword)
    spelled = spellings(list(label))
    title_hits = found(spelled, item.title)
    title_hits = unshadowed(spelled, title_hits, title_hits)
    description_hits = found(spelled, item.description) - title_hits if item.description else set()
    description_hits = unshadowed(spelled, description_hits, title_hits | description_hits)
    domain = canonical(item.domain) if item.domain else ""
    roles = list(dict.fromkeys(canonical(role) for role in item.roles))

    domains_of = {p.id: {canonical(d) for d in p.routing.domains} - {""} for p in profiles}
    roles_of = {p.id: {canonical(r) for r in p.routing.roles} - {""} for p in profiles}

    # Scores.
    scores: dict[str, float] = {}
    for profile in profiles:
        score = 0.0
        score += TITLE_WEIGHT * sum(1 for k in title_hits if k in owned[profile.id])
        score += DESCRIPTION_WEIGHT * sum(1 for k in description_hits if k in owned[profile.id])
        score += DOMAIN_WEIGHT if domain in domains_of[profile.id] else 0.0
        score += ROLE_WEIGHT * sum(1 for role in roles if role in roles_of[profile.id])
        if score > 0:
            if item.task_type in profile.routing.task_types:
                score += TASK_TYPE_WEIGHT
            scores[profile.id] = score
    ranked = sorted(((round(s, 3), p) for p, s in scores.items()), key=lambda e: (-e[0], e[1]))
    top, leader = ranked[0] if ranked else (0.0, "")
    runner_up = ranked[1][0] if len(ranked) > 1 else 0.0
    margin = max(TIE_MARGIN, TIE_RATIO * top)
    confidence = 0.0 if top <= 0 else top / (top + 3.0) * (0.5 + 0.5 * ((top - runner_up) / top))

    ambiguity: str | None = None
    if top >= MIN_SCORE and top - runner_up >= margin:
        computed, score = leader, top
        confidence = round(confidence, 3)
        winner = catalog.profiles[leader]
        mine = owned[leader]

        def matched(hits: set[str]) -> str:
            ordered = sorted((k for k in hits if k in mine), key=lambda k: (mine.index(k), k))
            return ", ".join(f"'{label[k]}'" for k in ordered)

        reasons = []
        if text := matched(title_hits):
            reasons.append(f"title matches {text}")
        if text := matched(description_hits):
            reasons.append(f"description matches {text}")
        if domain in domains_of[leader]:
            reasons.append(f"domain '{domain}' fits {leader}")
        reasons += [f"role '{r}' fits {leader}" for r in roles if r in roles_of[leader]]
        if item.task_type in winner.routing.task_types:
            reasons.append(f"task type {item.task_type.value} fits {leader}")
        reasons.append(f"routed to {leader} with score {_fmt(top)}; reviewer {winner.reviewer} from catalog")
    else:
        _require(catalog, FALLBACK_PROFILE)
        computed, score = FALLBACK_PROFILE, 0.0
        confidence = round(confidence * 0.5, 3)
        if top < MIN_SCORE:
            ambiguity = GAP_NO_SIGNAL
            detail = f"no profile reached the routing threshold {_fmt(MIN_SCORE)}"
            if ranked:
                detail += f" (best: {leader} {_fmt(top)})"
        else:
            close = [p for s, p in ranked if top - s < margin]
            named = close[:MAX_NAMED_CANDIDATES]
            listed = ", ".join(named[:-1]) + " and " + named[-1]
            if len(close) > len(named):
                listed = ", ".join(named) + " and others"
            ambiguity = f"{GAP_AMBIGUOUS_PREFIX}{listed} match about equally"
            shown = ", ".join(f"{p} {_fmt(s)}" for s, p in ranked[: len(named)])
            detail = f"top matches are too close to choose ({shown})"
        reviewer = catalog.profiles[FALLBACK_PROFILE].reviewer
        reasons = [
            detail,
            f"routed to {FALLBACK_PROFILE} to scope the work; reviewer {reviewer} from catalog",
        ]

    # Risk.
    points = 0
    for flag in RiskFlag:
        if flag in item.risk_flags:
            points += RISK_FLAG_POINTS[flag]
            reasons.append(f"risk flag {flag.value} raises risk (+{RISK_FLAG_POINTS[flag]})")
    risk_spelled = spellings(list(RISK_TERMS))
    terms = found(risk_spelled, item.title)
    if item.description:
        terms |= found(risk_spelled, item.description)
    order = [canonical(t) for t in RISK_TERMS]
    term_points = {canonical(t): p for t, p in RISK_TERMS.items()}
    for term in sorted(unshadowed(risk_spelled, terms, terms), key=order.index):
        if term_points[term]:
            points += term_points[term]
            reasons.append(f"text mentions '{term}' (risk +{term_points[term]})")
    level = RiskLevel.LOW
    for candidate, least in ((RiskLevel.CRITICAL, 6), (RiskLevel.HIGH, 3), (RiskLevel.MEDIUM, 1)):
        if points >= least:
            level = candidate
            break
    reasons.append(f"risk {level.value} from {points} point{'s' if points != 1 else ''}")

    primary = computed
    if override is not None:
        primary = override.profile
        score = 0.0
        if primary == computed:
            reasons.append(f"operator override confirms computed primary {primary}")
        else:
            reasons.append(f"operator override selects {primary} instead of {computed}")
        reasons.append(f"operator override: {normalize_text(override.reason)}")

    gaps = [ambiguity] if ambiguity else []
    if not item.evidence_refs:
        gaps.append(GAP_NO_EVIDENCE)
    if item.repo_alias is None and (
        item.task_type is TaskType.FIX or (item.task_type is TaskType.TEST and primary in CODE_PROFILES)
    ):
        gaps.append(GAP_NO_REPOSITORY)
    alternatives = [{"profile": p, "score": s} for s, p in ranked if p != primary][:MAX_ALTERNATIVES]
    return RouteDecision.model_validate(
        {
            "primary": primary,
            "reviewer": catalog.profiles[primary].reviewer,
            "confidence": confidence,
            "score": score,
            "risk": level,
            "reasons": reasons,
            "alternatives": alternatives,
            "evidence_gaps": gaps,
            "repo_alias": item.repo_alias,
            "task_type": item.task_type,
            "override": override,
        }
    )
