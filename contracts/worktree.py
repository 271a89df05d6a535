"""Worktree execution: one attempt's worktree, the evidence of what it changed, and how it fails.

docs/architecture.md "Worktree execution": an approved ``worktree``/``pr_ready`` run edits files in a fresh,
detached ``git worktree`` of an allow-listed repository at the contract's frozen base commit — one new
worktree per attempt, never reused or overwritten — and the run *fails closed* on a commit made by the model,
a new commit or ref in the source repository, a ``git diff --check`` failure, an unavailable base commit,
more than :data:`MAX_CHANGED_FILES` changed paths, or a path that escapes the worktree. The evidence is
what git says changed against the base commit, never the model's claim.

These models cross the Temporal boundary (activity in/out), so new fields get defaults. No I/O here.
"""

from __future__ import annotations

import datetime as dt
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Final

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from contracts.errors import Refused

MAX_CHANGED_FILES: Final = 40
"""Most paths an attempt may change: tracked modified, added (untracked included, ignored ones too)
and deleted all count, and a rename counts as its two paths (docs/architecture.md "Worktree execution")."""

MAX_INLINE_DIFF_BYTES: Final = 256 * 1024
"""A diff up to this size (and valid UTF-8) travels inline in :class:`ChangeEvidence`; a bigger one is
stored by reference (sha256 + path of a file in the attempt's evidence directory), never shortened."""

MAX_PATCH_BYTES: Final = 1024 * 1024
"""Largest patch :func:`activities.worktree.apply_patch` accepts (UTF-8 bytes); over it is refused."""

Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
CommitId = Annotated[str, StringConstraints(pattern=r"^(?:[0-9a-f]{40}|[0-9a-f]{64})$")]


class ExecutionFailure:
    """``type`` of the error an attempt fails closed with (the ``code`` of :class:`WorktreeExecutionFailed`
    and, through ``activities.errors.refusal``, the ``ApplicationError.type``). None is retryable."""

    BASE_COMMIT_UNAVAILABLE: Final = "base_commit_unavailable"
    """The contract's base commit is not a commit in the repository's object store."""
    HEAD_MOVED: Final = "head_moved"
    """The worktree's HEAD is no longer the detached base commit (checked out elsewhere, attached to a
    branch, or moved to a commit that does not descend from the base)."""
    NEW_COMMIT: Final = "new_commit"
    """A commit was made: in the worktree (HEAD or its reflog shows a commit other than the base), or in
    the source repository (one of its refs, or its HEAD, now points somewhere else)."""
    NEW_REF: Final = "new_ref"
    """A ref appeared in (or vanished from) the source repository since the attempt began."""
    DIFF_CHECK_FAILED: Final = "diff_check_failed"
    """``git diff --check`` against the base commit found whitespace errors or conflict markers."""
    TOO_MANY_FILES: Final = "too_many_files"
    """More than :data:`MAX_CHANGED_FILES` paths changed."""
    PATH_OUTSIDE_WORKTREE: Final = "path_outside_worktree"
    """A changed path is absolute, has ``..``, names git's metadata, is a nested repository, or resolves
    (through a symlink the change creates or follows) outside the worktree."""
    PATCH_DOES_NOT_APPLY: Final = "patch_does_not_apply"
    """A well-formed patch that ``git apply --check`` refuses at the base commit."""
    PATCH_INVALID: Final = "patch_invalid"
    """A patch that is empty, too big, not a ``diff --git`` patch, binary, a submodule change, or touches
    ``.git`` metadata."""
    COMMAND_TIMEOUT: Final = "command_timeout"
    """The ``command`` executor's agent did not exit within its wall-clock budget (its whole process
    group was killed)."""
    COMMAND_OUTPUT_TOO_LARGE: Final = "command_output_too_large"
    """The agent wrote more than the bound to stdout or stderr (its process group was killed; nothing
    is cut silently)."""
    COMMAND_FAILED: Final = "command_failed"
    """The agent exited with a non-zero status, was killed by a signal, or could not be started."""
    CONFINEMENT_UNAVAILABLE: Final = "confinement_unavailable"
    """The sandbox the agent and verify commands run in (bubblewrap) cannot be set up on the worker —
    not installed, or unable to create its namespaces — and the repository configuration does not
    accept running unconfined (``allow_unconfined``): nothing ran."""
    VERIFICATION_CHANGED_TREE: Final = "verification_changed_tree"
    """A pr_ready run's verification command changed the worktree: git's evidence after verification
    differs from the evidence before it (a verify command must not change what is reviewed)."""


EXECUTION_FAILURE_TYPES: Final = frozenset(
    {
        ExecutionFailure.BASE_COMMIT_UNAVAILABLE,
        ExecutionFailure.HEAD_MOVED,
        ExecutionFailure.NEW_COMMIT,
        ExecutionFailure.NEW_REF,
        ExecutionFailure.DIFF_CHECK_FAILED,
        ExecutionFailure.TOO_MANY_FILES,
        ExecutionFailure.PATH_OUTSIDE_WORKTREE,
        ExecutionFailure.PATCH_DOES_NOT_APPLY,
        ExecutionFailure.PATCH_INVALID,
        ExecutionFailure.COMMAND_TIMEOUT,
        ExecutionFailure.COMMAND_OUTPUT_TOO_LARGE,
        ExecutionFailure.COMMAND_FAILED,
        ExecutionFailure.CONFINEMENT_UNAVAILABLE,
        ExecutionFailure.VERIFICATION_CHANGED_TREE,
    }
)


class WorktreeExecutionFailed(Refused):
    """An attempt failed closed: ``code`` is one of :data:`EXECUTION_FAILURE_TYPES`, ``message`` says what
    was found. The worktree is left as it is (preserved for the operator), never cleaned or reused."""

    def __init__(self, failure_type: str, message: str) -> None:
        if failure_type not in EXECUTION_FAILURE_TYPES:
            raise ValueError(f"unknown execution failure type {failure_type!r}")
        super().__init__(failure_type, message)


class WorktreeAttempt(BaseModel):
    """One attempt of a run: a detached worktree of ``repository`` at ``base_commit``.

    ``worktree`` is ``<state>/worktrees/<run_id>/attempt-<attempt>`` and ``evidence_dir`` its sibling
    ``attempt-<attempt>.evidence`` (outside the worktree, so nothing stored there is part of the change).
    ``source_refs_sha256`` is the sha256 of the source repository's refs and HEAD as recorded when the
    attempt was created (the listing itself is ``source-refs.txt`` in ``evidence_dir``); a later
    difference means a new commit or ref appeared.
    """

    model_config = ConfigDict(frozen=True)

    run_id: str
    attempt: int = Field(ge=1)
    repository: Path
    base_commit: CommitId
    worktree: Path
    evidence_dir: Path
    source_refs_sha256: Sha256
    source_refs_count: int = Field(ge=0)


class AppliedPatch(BaseModel):
    """A patch applied to an attempt's worktree: its sha256 and size, the paths git touched (sorted), and
    where a copy of it was kept (``patch-<sha256>.diff`` in the evidence directory)."""

    model_config = ConfigDict(frozen=True)

    patch_sha256: Sha256
    patch_bytes: int = Field(ge=1)
    paths: list[str]
    patch_path: Path


class FileStatus(StrEnum):
    """How a path changed against the base commit. A type change (e.g. file → symlink) is ``modified``
    with differing modes; copies are not detected."""

    ADDED = "added"
    MODIFIED = "modified"
    DELETED = "deleted"
    RENAMED = "renamed"


class ChangedFile(BaseModel):
    """One entry of ``git diff --raw -M`` against the base commit. ``old_path`` is set for a rename;
    modes are git's octal modes (``100644``, ``100755``, ``120000`` for a symlink), ``None`` on the side
    where the path does not exist."""

    model_config = ConfigDict(frozen=True)

    path: str
    status: FileStatus
    old_path: str | None = None
    old_mode: str | None = None
    new_mode: str | None = None


class NumstatEntry(BaseModel):
    """Lines added and deleted for one path (``git diff --numstat -M``); both ``None`` for a binary file."""

    model_config = ConfigDict(frozen=True)

    path: str
    added: int | None = Field(default=None, ge=0)
    deleted: int | None = Field(default=None, ge=0)
    old_path: str | None = None


class ChangeEvidence(BaseModel):
    """What an attempt actually changed against ``base_commit``, computed by git from the worktree.

    ``files_changed`` counts distinct changed paths without rename pairing (a rename counts twice: its
    old and new path) — the number the :data:`MAX_CHANGED_FILES` limit applies to. The full text diff
    (binary files appear as "Binary files ... differ", counted as ``None`` in ``numstat``) is either
    inline in ``diff`` or, when over :data:`MAX_INLINE_DIFF_BYTES` or not valid UTF-8, stored in the
    file ``diff_path``; ``diff_sha256`` and ``diff_bytes`` describe the exact bytes either way.
    Paths that are not valid UTF-8 are shown with backslash escapes.
    """

    model_config = ConfigDict(frozen=True)

    run_id: str
    attempt: int = Field(ge=1)
    base_commit: CommitId
    files: list[ChangedFile]
    numstat: list[NumstatEntry]
    files_changed: int = Field(ge=0, le=MAX_CHANGED_FILES)
    diff: str | None = None
    diff_path: Path | None = None
    diff_sha256: Sha256
    diff_bytes: int = Field(ge=0)

    @model_validator(mode="after")
    def _diff_inline_or_by_reference(self) -> ChangeEvidence:
        if (self.diff is None) == (self.diff_path is None):
            raise ValueError("exactly one of diff (inline) and diff_path (by reference) must be set")
        return self


class WorktreeClaim(BaseModel):
    """A worker's durable claim of one execution attempt of a run (``store.worktree_claims``).

    At most one claim exists per (``run_id``, ``execution_attempt``), so two workers never run the same
    execution attempt. ``worker`` identifies the claiming worker; ``worktree_attempt`` is the number of
    the attempt directory (``attempt-<n>``, see :class:`WorktreeAttempt`) it runs the attempt in;
    ``claimed_at`` is when the claim was recorded (UTC).
    """

    model_config = ConfigDict(frozen=True)

    run_id: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]{1,64}$")]
    execution_attempt: int = Field(ge=1)
    worker: str = Field(min_length=1, max_length=200)
    worktree_attempt: int = Field(ge=1)
    claimed_at: dt.datetime
