"""The orchestration decision: one review, or a review wave, for a run (docs/architecture.md
"Orchestration"). Decided by ``catalog.orchestration.decide`` at capture and frozen in the contract,
so the digest an operator approves covers it."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from contracts.model_classes import ModelClass


class ReviewDomain(StrEnum):
    """A consequential domain a piece of work can touch, each with its own review axis."""

    CODE = "code"
    TESTS = "tests"
    DOCS = "docs"
    CI = "ci"
    SECURITY = "security"
    DATA = "data"
    RELEASE = "release"
    PERFORMANCE = "performance"
    ACCESSIBILITY = "accessibility"


ACCOMPANYING_DOMAINS = frozenset({ReviewDomain.TESTS, ReviewDomain.DOCS})
"""Domains that go with a change rather than add to it: one coherent change with its regression test
and its docs is one domain, not three."""


class ReviewShape(StrEnum):
    """``none``: a recommend run, no model pass; ``single``: one primary pass and one reviewer;
    ``wave``: a frozen roster of review passes, one per axis (docs/architecture.md "Orchestration")."""

    NONE = "none"
    SINGLE = "single"
    WAVE = "wave"


OVERALL_AXIS = "overall"
"""The axis of a wave's general pass: the route's reviewer, asking what a single review asks."""
CHALLENGE_AXIS = "challenge"
"""The axis of the adversarial pass a high or critical risk conclusion gets."""


ADVISORY_AXIS_PREFIX = "advisory-"
"""An advisory pass's axis is this prefix and its topic (``advisory-architecture``)."""


class AdvisoryTopic(StrEnum):
    """What an advisory pass advises on. Only an operator's explicit request adds one to a run (never
    a label, a domain or a risk flag), and it runs on the selection's advisory model (class
    ``advisory``, docs/architecture.md "Model selection")."""

    ARCHITECTURE = "architecture"
    SECURITY = "security"

    @property
    def axis(self) -> str:
        """The pass's axis: ``advisory-<topic>``."""
        return f"{ADVISORY_AXIS_PREFIX}{self.value}"


class ReviewPass(BaseModel):
    """One pass of a review wave: the profile that makes it, the axes it reviews (an axis is a
    :class:`ReviewDomain` value, ``overall`` or ``challenge``) and the question of each, in order.
    ``substitutes``: the axes this profile takes in line for another (axis -> the profile the axis
    names, which is the run's primary or not in the catalog). ``model_class``: ``advisory`` for the
    advisory pass an operator asked for (it runs on the advisory model), else None (the review
    job's own class and models)."""

    model_config = ConfigDict(frozen=True)

    profile: str
    axes: list[str]
    questions: list[str]
    substitutes: dict[str, str] = {}
    model_class: ModelClass | None = None


class OrchestrationDecision(BaseModel):
    """How a run is reviewed and why.

    ``domains``: every domain the work touches, with where each was seen (``evidence`` lists the
    signals by domain); ``consequential``: the domains that count towards a wave (accompanying tests
    and docs folded into the change they go with); ``adversarial``: a high or critical risk
    conclusion gets a challenger pass; ``operator_requested``: the operator asked for a wave;
    ``advisory``: the topic of the advisory pass the operator asked for (None: none was asked for).
    ``reasons``: the decision in words, in the order it was made. ``roster``: a wave's passes, frozen
    here before anything is dispatched (empty unless the shape is ``wave``).
    """

    model_config = ConfigDict(frozen=True)

    shape: ReviewShape
    domains: list[ReviewDomain]
    consequential: list[ReviewDomain]
    evidence: dict[ReviewDomain, list[str]]
    adversarial: bool
    operator_requested: bool
    reasons: list[str]
    roster: list[ReviewPass] = []
    advisory: AdvisoryTopic | None = None

    def to_json_dict(self) -> dict[str, object]:
        """``model_dump(mode="json")``, written out (a route preview's JSON is built without pydantic's
        JSON-mode dump: see ``RouteDecision.to_json_dict``)."""
        return {
            "shape": self.shape.value,
            "domains": [domain.value for domain in self.domains],
            "consequential": [domain.value for domain in self.consequential],
            "evidence": {domain.value: list(signals) for domain, signals in self.evidence.items()},
            "adversarial": self.adversarial,
            "operator_requested": self.operator_requested,
            "reasons": list(self.reasons),
            "roster": [
                {
                    "profile": p.profile,
                    "axes": list(p.axes),
                    "questions": list(p.questions),
                    "substitutes": dict(p.substitutes),
                    "model_class": p.model_class.value if p.model_class is not None else None,
                }
                for p in self.roster
            ],
            "advisory": self.advisory.value if self.advisory is not None else None,
        }
