"""Which patched behaviours a workflow execution has (docs/architecture.md "Temporal conventions").

Each ``workflow.patched()`` call that a new execution makes records a marker event and an upsert of
the ``TemporalChangeVersion`` search attribute — a visibility write of its own when it comes after
the first workflow task. A workflow whose changes each came behind their own patch id asks one
consolidated id first, once, where the earliest of them was asked: executions that record it have
every behaviour and ask none of the older ids; executions recorded before it ask each older id
exactly where and when they always did, so their histories still replay.

A consolidated id can itself be succeeded: executions recorded under the previous one have every
behaviour it stood for and ask, one by one, only the ids added after it.
Deterministic: imported by workflow code only.
"""

from __future__ import annotations

from collections.abc import Collection

from temporalio import workflow


class Behaviours:
    """The patched behaviours of one execution: all of them under ``consolidated``; under
    ``previous`` (the consolidated id it succeeds) all but ``added_since_previous``, which each
    marker says; else each older patch id as its own marker says (asked lazily, in the order the
    code reaches it)."""

    def __init__(
        self,
        consolidated: str,
        *,
        previous: str | None = None,
        added_since_previous: Collection[str] = (),
    ) -> None:
        self._all = workflow.patched(consolidated)
        self._previous = not self._all and previous is not None and workflow.patched(previous)
        self._added = frozenset(added_since_previous)

    @property
    def consolidated(self) -> bool:
        """Whether this execution recorded the consolidated marker (every behaviour applies)."""
        return self._all

    def has(self, patch_id: str) -> bool:
        """Whether the behaviour behind ``patch_id`` applies (no marker asked under the consolidated
        one, nor under the previous one for a behaviour it stood for)."""
        if self._all or (self._previous and patch_id not in self._added):
            return True
        return workflow.patched(patch_id)
