"""Which patched behaviours a workflow execution has (docs/architecture.md "Temporal conventions").

Each ``workflow.patched()`` call that a new execution makes records a marker event and an upsert of
the ``TemporalChangeVersion`` search attribute. A workflow whose changes each came behind their own
patch id asks one consolidated id first, once, where the earliest of them was asked: executions that
record it have every behaviour and ask none of the older ids; executions recorded before it ask each
older id exactly where and when they always did, so their histories still replay.
Deterministic: imported by workflow code only.
"""

from __future__ import annotations

from temporalio import workflow


class Behaviours:
    """The patched behaviours of one execution: all of them under ``consolidated``, else each older
    patch id as its own marker says (asked lazily, in the order the code reaches it)."""

    def __init__(self, consolidated: str) -> None:
        self._all = workflow.patched(consolidated)

    @property
    def consolidated(self) -> bool:
        """Whether this execution recorded the consolidated marker (every behaviour applies)."""
        return self._all

    def has(self, patch_id: str) -> bool:
        """Whether the behaviour behind ``patch_id`` applies (no marker asked under the consolidated one)."""
        return self._all or workflow.patched(patch_id)
