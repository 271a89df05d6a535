"""Deciding how a run is reviewed: one reviewer, or a review wave (docs/architecture.md
"Orchestration"). Pure: the same work item, route, tier and request give the same decision, with
its reasons, as the router does.

The work's domains come from what it names: each ``file:PATH`` evidence ref by its path (CI
configuration, tests, docs, release and packaging files, data migrations and SQL, security code,
benchmarks, accessibility work, else code), advisory refs (``cve:``, ``ghsa:``, ``advisory:``), the
work item's domain and roles by keyword, its task type (``document``, ``test``, ``fix``) and its
risk flags (credentials and external exposure: security; customer data and data loss: data).

Restraint first: tests and docs that go with a change fold into it, so one coherent change with its
regression test and its docs stays one domain. A wave is chosen when the operator asks for one, when
two or more consequential domains remain, when the route's risk is high or critical (an
adversarial challenger pass) or when the operator asks for an advisory pass (architecture or security
advice on the advisory model: never chosen by a label, a domain or a risk flag); otherwise one
reviewer. A recommend run makes no model pass at all.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import PurePosixPath
from typing import Final

from catalog.loaded import LoadedCatalog
from contracts.enums import RiskFlag, RiskLevel, TaskType, Tier
from contracts.model_classes import ModelClass
from contracts.orchestration import (
    ACCOMPANYING_DOMAINS,
    CHALLENGE_AXIS,
    OVERALL_AXIS,
    AdvisoryTopic,
    OrchestrationDecision,
    ReviewDomain,
    ReviewPass,
    ReviewShape,
)
from contracts.routing import RouteDecision
from contracts.work_item import WorkItem

D = ReviewDomain

_FILE_REF: Final = "file:"
_ADVISORY_KINDS: Final = frozenset({"cve", "ghsa", "advisory", "vuln"})

_CI_PREFIXES: Final = (".github/workflows/", ".gitlab-ci", ".circleci/", ".ci/", ".buildkite/", ".woodpecker")
_CI_NAMES: Final = frozenset({"jenkinsfile", "azure-pipelines.yml", ".travis.yml", ".gitlab-ci.yml"})
_TEST_DIRS: Final = frozenset({"tests", "test", "__tests__", "spec", "testing"})
_TEST_NAME: Final = re.compile(r"^(test_.*|.*_test\.[a-z0-9]+|.*\.(test|spec)\.[a-z0-9]+|conftest\.py)$")
_DOC_DIRS: Final = frozenset({"docs", "doc", "documentation"})
_DOC_SUFFIXES: Final = frozenset({".md", ".rst", ".adoc"})
_RELEASE_NAMES: Final = re.compile(
    r"^(changelog.*|changes.*|version|pyproject\.toml|setup\.py|setup\.cfg|package\.json|cargo\.toml|"
    r"go\.mod|dockerfile.*|.*\.lock|requirements.*\.(txt|lock)|chart\.yaml)$"
)
_RELEASE_DIRS: Final = frozenset(
    {"release", "releases", "deploy", "deployment", "k8s", "helm", "charts", "infra"}
)
_DATA_DIRS: Final = frozenset({"migrations", "migration", "alembic", "db", "schema", "sql"})
_DATA_SUFFIXES: Final = frozenset({".sql"})
_SECURITY_WORDS: Final = re.compile(
    r"auth|security|crypto|secret|permission|acl|oauth|saml|jwt|tls|cert|iam|sandbox|csrf|session"
)
_SECURITY_SUFFIXES: Final = frozenset({".pem", ".key", ".crt"})
_PERFORMANCE_DIRS: Final = frozenset({"bench", "benchmarks", "benchmark", "perf", "performance"})
_ACCESSIBILITY_WORDS: Final = re.compile(r"a11y|accessib|wcag|aria")

_KEYWORDS: Final[dict[ReviewDomain, frozenset[str]]] = {
    D.SECURITY: frozenset(
        {"security", "appsec", "auth", "authentication", "authorization", "iam", "crypto", "cryptography",
         "vulnerability", "threat", "pentest", "secrets", "compliance"}
    ),
    D.DATA: frozenset({"database", "data", "dba", "sql", "postgres", "postgresql", "mysql", "schema",
                       "migration", "etl", "analytics", "warehouse"}),
    D.CI: frozenset({"ci", "pipeline", "build", "cicd"}),
    D.RELEASE: frozenset({"release", "deployment", "deploy", "packaging", "rollout"}),
    D.PERFORMANCE: frozenset({"performance", "perf", "latency", "scalability", "throughput"}),
    D.ACCESSIBILITY: frozenset({"accessibility", "a11y", "wcag"}),
    D.DOCS: frozenset({"docs", "documentation", "writer", "technical-writing"}),
    D.TESTS: frozenset({"testing", "qa", "tests"}),
    D.CODE: frozenset({"backend", "frontend", "api", "code", "engineering", "developer", "implementation"}),
}  # fmt: skip
_TASK_DOMAINS: Final = {TaskType.DOCUMENT: D.DOCS, TaskType.TEST: D.TESTS, TaskType.FIX: D.CODE}
_FLAG_DOMAINS: Final = {
    RiskFlag.CREDENTIALS: D.SECURITY,
    RiskFlag.EXTERNAL_EXPOSURE: D.SECURITY,
    RiskFlag.CUSTOMER_DATA: D.DATA,
    RiskFlag.DATA_LOSS: D.DATA,
}
_ORDER: Final = list(ReviewDomain)

AXIS_PROFILES: Final[dict[str, str]] = {
    OVERALL_AXIS: "",  # the route's reviewer
    D.CODE: "code-reviewer",
    D.TESTS: "test-automation-engineer",
    D.DOCS: "technical-writer",
    D.CI: "devops-automator",
    D.SECURITY: "application-security-engineer",
    D.DATA: "database-optimizer",
    D.RELEASE: "devops-automator",
    D.PERFORMANCE: "backend-architect",
    D.ACCESSIBILITY: "accessibility-auditor",
    CHALLENGE_AXIS: "reality-checker",
}
"""Who reviews each axis of a wave (a catalog profile id). A profile that is the run's primary never
reviews: its axis goes to the primary's own reviewer in the catalog."""
AXIS_QUESTIONS: Final[dict[str, str]] = {
    OVERALL_AXIS: "Do the findings follow from the evidence, and is anything material missing or wrong?",
    D.CODE: "Is the change correct, minimal and consistent with the code around it?",
    D.TESTS: "Do the tests prove the behaviour, and would they fail without the change?",
    D.DOCS: "Do the docs say what the change does, for the people who read them?",
    D.CI: "Does every check stay meaningful, and do the pipeline's permissions stay least-privilege?",
    D.SECURITY: "Does the work open or leave a path to credentials, injection, privilege or data exposure?",
    D.DATA: "Are the data changes safe to apply and to roll back, and what do they cost in locks and writes?",
    D.RELEASE: "Is it safe to release: versioning, packaging, rollout and rollback?",
    D.PERFORMANCE: "Are the performance claims measured against a baseline, and what does the change cost?",
    D.ACCESSIBILITY: "Does it meet WCAG 2.2 AA for the people it affects?",
    CHALLENGE_AXIS: "Argue against the conclusion: what evidence would falsify it, and is any of it here?",
}
"""The question each axis of a wave asks."""
ADVISORY_PROFILES: Final[dict[AdvisoryTopic, str]] = {
    AdvisoryTopic.ARCHITECTURE: "backend-architect",
    AdvisoryTopic.SECURITY: "application-security-engineer",
}
"""Who gives each advisory pass (a catalog profile id; the run's primary never does: its reviewer
takes the pass in line, as for any axis)."""
ADVISORY_QUESTIONS: Final[dict[AdvisoryTopic, str]] = {
    AdvisoryTopic.ARCHITECTURE: (
        "As an architecture adviser: what structural risk, coupling or failure mode does the work leave, "
        "and what would you do differently?"
    ),
    AdvisoryTopic.SECURITY: (
        "As a security adviser: what threat does the work leave open or create, how likely and how bad, "
        "and what would close it?"
    ),
}
"""The question of each advisory pass."""


def path_domain(path: str) -> ReviewDomain:
    """The domain of one repository path (the first rule that matches, in the module's order)."""
    pure = PurePosixPath(path.lower())
    name, suffix, dirs = pure.name, pure.suffix, set(pure.parts[:-1])
    text = path.lower()
    if text.startswith(_CI_PREFIXES) or name in _CI_NAMES:
        return D.CI
    if dirs & _TEST_DIRS or _TEST_NAME.match(name):
        return D.TESTS
    if _RELEASE_NAMES.match(name) or dirs & _RELEASE_DIRS:
        return D.RELEASE
    if dirs & _DOC_DIRS or suffix in _DOC_SUFFIXES:
        return D.DOCS
    if dirs & _DATA_DIRS or suffix in _DATA_SUFFIXES:
        return D.DATA
    if suffix in _SECURITY_SUFFIXES or _SECURITY_WORDS.search(text):
        return D.SECURITY
    if dirs & _PERFORMANCE_DIRS:
        return D.PERFORMANCE
    if _ACCESSIBILITY_WORDS.search(text):
        return D.ACCESSIBILITY
    return D.CODE


def _words(text: str) -> set[str]:
    return {word for word in re.split(r"[^a-z0-9-]+", text.lower()) if word}


def work_domains(item: WorkItem) -> dict[ReviewDomain, list[str]]:
    """Every domain the work item names, each with the signals it was seen in (in item order)."""
    seen: dict[ReviewDomain, list[str]] = {}

    def add(domain: ReviewDomain, signal: str) -> None:
        signals = seen.setdefault(domain, [])
        if signal not in signals:
            signals.append(signal)

    for ref in item.evidence_refs:
        kind = ref.split(":", 1)[0].lower()
        if ref.startswith(_FILE_REF):
            add(path_domain(ref[len(_FILE_REF) :]), ref)
        elif kind in _ADVISORY_KINDS:
            add(D.SECURITY, ref)
    for label, text in [("domain", item.domain), *(("role", role) for role in item.roles)]:
        words = _words(text)
        for domain, keywords in _KEYWORDS.items():
            if words & keywords:
                add(domain, f"{label} {text!r}")
    if item.task_type in _TASK_DOMAINS:
        add(_TASK_DOMAINS[item.task_type], f"task type {item.task_type.value}")
    for flag in item.risk_flags:
        if flag in _FLAG_DOMAINS:
            add(_FLAG_DOMAINS[flag], f"risk flag {flag.value}")
    return {domain: seen[domain] for domain in _ORDER if domain in seen}


def consequential(domains: Iterable[ReviewDomain]) -> list[ReviewDomain]:
    """The domains that count towards a wave: accompanying tests and docs fold into the change they
    go with; tests and docs with nothing else are one domain (the first of them)."""
    present = [domain for domain in _ORDER if domain in set(domains)]
    counted = [domain for domain in present if domain not in ACCOMPANYING_DOMAINS]
    return counted or present[:1]


def catalog_reviewers(catalog: LoadedCatalog) -> dict[str, str]:
    """Each profile of ``catalog`` and its own reviewer (what :func:`roster` needs of the catalog)."""
    return {profile_id: profile.reviewer for profile_id, profile in catalog.profiles.items()}


def roster(
    domains: Iterable[ReviewDomain],
    route: RouteDecision,
    reviewers: Mapping[str, str],
    *,
    adversarial: bool,
    advisory: AdvisoryTopic | None = None,
) -> list[ReviewPass]:
    """A wave's passes: the route's reviewer on the ``overall`` axis, one axis per domain the work
    touches (in domain order), a ``challenge`` axis when ``adversarial``, and last the advisory pass
    the operator asked for (``advisory``), always a pass of its own since it runs on the advisory
    model. ``reviewers`` maps each catalog profile to its own reviewer: an axis whose profile is the
    run's primary, or is not in the catalog, goes to the primary's reviewer. Other axes that land on
    one profile are one pass."""
    axes = [OVERALL_AXIS, *(domain.value for domain in domains), *([CHALLENGE_AXIS] if adversarial else [])]
    passes: dict[str, tuple[list[str], list[str], dict[str, str]]] = {}
    for axis in axes:
        named_profile = AXIS_PROFILES[axis] or route.reviewer
        profile = _reviewing_profile(named_profile, route, reviewers)
        named, questions, substitutes = passes.setdefault(profile, ([], [], {}))
        named.append(axis)
        questions.append(AXIS_QUESTIONS[axis])
        if profile != named_profile:
            substitutes[axis] = named_profile
    wave = [
        ReviewPass(profile=p, axes=named, questions=qs, substitutes=subs)
        for p, (named, qs, subs) in passes.items()
    ]
    if advisory is not None:
        named_profile = ADVISORY_PROFILES[advisory]
        profile = _reviewing_profile(named_profile, route, reviewers)
        wave.append(
            ReviewPass(
                profile=profile,
                axes=[advisory.axis],
                questions=[ADVISORY_QUESTIONS[advisory]],
                substitutes={advisory.axis: named_profile} if profile != named_profile else {},
                model_class=ModelClass.ADVISORY,
            )
        )
    return wave


def _reviewing_profile(named: str, route: RouteDecision, reviewers: Mapping[str, str]) -> str:
    """``named``, unless it is the run's primary or not in the catalog: then the primary's reviewer."""
    if named == route.primary or named not in reviewers:
        return reviewers.get(route.primary) or route.reviewer
    return named


def decide(
    item: WorkItem,
    route: RouteDecision,
    tier: Tier,
    *,
    requested: bool = False,
    advisory: AdvisoryTopic | None = None,
    reviewers: Mapping[str, str] | None = None,
) -> OrchestrationDecision:
    """How a run of ``item`` on ``route`` at ``tier`` is reviewed (``requested``: the operator asked
    for a review wave; ``advisory``: the operator asked for an advisory pass on that topic;
    ``reviewers``: each catalog profile's reviewer, for a wave's roster — without it every axis goes
    to the route's reviewer). A recommend run makes no pass, advisory or not: the reasons say the
    request was not taken."""
    evidence = work_domains(item)
    counted = consequential(evidence)
    adversarial = route.risk.rank >= RiskLevel.HIGH.rank
    reasons: list[str] = []
    if evidence:
        reasons.append(
            "the work touches "
            + "; ".join(f"{domain.value} ({', '.join(signals)})" for domain, signals in evidence.items())
        )
    else:
        reasons.append("the work names no file, domain, role or flag that places it in a review domain")
    folded = [domain.value for domain in evidence if domain in ACCOMPANYING_DOMAINS and domain not in counted]
    if folded:
        reasons.append(
            f"{' and '.join(folded)} go with the change: they do not count towards a wave "
            "(a wave still reviews them)"
        )
    shape = ReviewShape.SINGLE
    if tier is Tier.RECOMMEND:
        shape = ReviewShape.NONE
        reasons.append("a recommend run makes no model pass: nothing is reviewed")
        if advisory is not None:
            reasons.append(f"the {advisory.value} advisory pass asked for is not taken: no pass is made")
    else:
        if requested:
            reasons.append("the operator asked for a review wave")
        if advisory is not None:
            reasons.append(
                f"the operator asked for a {advisory.value} advisory pass: a pass of its own on the "
                "advisory model, in a wave"
            )
        if len(counted) >= 2:
            reasons.append(
                f"it crosses {len(counted)} consequential domains ({', '.join(d.value for d in counted)}): "
                "one review pass per axis"
            )
        if adversarial:
            reasons.append(f"a {route.risk.value} risk conclusion gets an adversarial challenger pass")
        if requested or len(counted) >= 2 or adversarial or advisory is not None:
            shape = ReviewShape.WAVE
        else:
            reasons.append(
                f"{'one consequential domain (' + counted[0].value + ')' if counted else 'no domain'} "
                f"at {route.risk.value} risk: one independent reviewer"
            )
    passes: list[ReviewPass] = []
    if shape is ReviewShape.WAVE:
        known = reviewers if reviewers is not None else {route.reviewer: route.reviewer}
        passes = roster(evidence, route, known, adversarial=adversarial, advisory=advisory)
        reasons.append(
            f"the wave's roster, frozen with the contract: {len(passes)} "
            f"pass{'es' if len(passes) != 1 else ''} ("
            + "; ".join(
                f"{p.profile} on {', '.join(p.axes)}"
                + (f" ({p.model_class.value} model)" if p.model_class is not None else "")
                for p in passes
            )
            + ")"
        )
    return OrchestrationDecision(
        shape=shape,
        domains=list(evidence),
        consequential=counted,
        evidence=evidence,
        adversarial=adversarial and shape is not ReviewShape.NONE,
        operator_requested=requested,
        reasons=reasons,
        roster=passes,
        advisory=advisory if shape is ReviewShape.WAVE else None,
    )
