"""Model classes (docs/architecture.md "Model selection"): every model call belongs to one class, and
each class has its own in-flight ceiling across every worker, beside each model's own ceiling.

``support`` is bounded support work (documentation, curation, CI stewardship, triage), ``core`` the
work that decides (implementation, tests, runtime behaviour, research method, adversarial challenge,
executable verification) and ``advisory`` architecture or security advice, used only when an operator
explicitly asks for an advisory pass — never chosen by a label or a risk flag. A call holds a lease
from its class's pool (a ``ModelCeiling`` workflow with id :func:`class_pool_id` in place of a model
id, without the ramp) before it asks its model's ceiling for one.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Final

from contracts.errors import InvalidInput


class ModelClass(StrEnum):
    SUPPORT = "support"
    CORE = "core"
    ADVISORY = "advisory"


class ReasoningEffort(StrEnum):
    """How hard a model is asked to reason, part of the model selection for each class: sent as
    OpenAI's ``reasoning_effort`` and as an Anthropic thinking budget (:data:`THINKING_BUDGET_TOKENS`)."""

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"


THINKING_BUDGET_TOKENS: Final[Mapping[ReasoningEffort, int]] = {
    ReasoningEffort.LOW: 1024,
    ReasoningEffort.MEDIUM: 4096,
    ReasoningEffort.HIGH: 16384,
}
"""The Anthropic thinking budget of each effort (1,024 is the provider's smallest)."""


DEFAULT_CLASS_CEILINGS: Final[Mapping[ModelClass, int]] = {
    ModelClass.SUPPORT: 20,
    ModelClass.CORE: 5,
    ModelClass.ADVISORY: 2,
}
MAX_CLASS_CEILING: Final = 1000
CLASS_POOL_PREFIX: Final = "class:"


def class_pool_id(model_class: ModelClass) -> str:
    """The id a class's pool takes where a ceiling names its model (``class:<name>``: no
    registrable provider is called ``class``, so it is never a model's)."""
    return f"{CLASS_POOL_PREFIX}{model_class.value}"


def parse_class_ceilings(text: str, *, variable: str) -> dict[ModelClass, int]:
    """``support=20,core=5,advisory=2`` (any subset; the rest keep their defaults) as ceilings by
    class. Raises :class:`InvalidInput` ``invalid_setting`` naming ``variable`` for an unknown class,
    a repeated one or a ceiling that is not a whole number from 1 to 1,000."""
    ceilings = dict(DEFAULT_CLASS_CEILINGS)
    seen: set[str] = set()
    for part in text.split(","):
        name, sep, value = (piece.strip() for piece in part.partition("="))
        if not part.strip():
            continue
        known = ", ".join(c.value for c in ModelClass)
        if not sep or name not in {c.value for c in ModelClass}:
            raise InvalidInput(
                "invalid_setting",
                f"{variable}: {part.strip()!r} is not CLASS=CEILING with CLASS one of {known}",
            )
        if name in seen:
            raise InvalidInput("invalid_setting", f"{variable}: class {name} is given twice")
        seen.add(name)
        if not (value.isascii() and value.isdigit()) or not 1 <= int(value) <= MAX_CLASS_CEILING:
            raise InvalidInput(
                "invalid_setting",
                f"{variable}: the ceiling of {name} must be a whole number from 1 to {MAX_CLASS_CEILING}, "
                f"not {value!r}",
            )
        ceilings[ModelClass(name)] = int(value)
    return ceilings
