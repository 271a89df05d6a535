"""Executing an approved worktree run: the ``execute_worktree_attempt`` activity's input and result, the
change a reviewer sees, and what the run keeps of its execution.

docs/architecture.md "Worktree execution". The run's change job returns a unified diff
(``SpecialistOutput.patch``); one activity then claims an execution attempt, makes a fresh detached worktree
at the contract's base commit, applies the patch with git and fails closed on anything outside the rules
(``contracts.worktree.ExecutionFailure``). What git reports as changed (:class:`ChangeEvidence`) is the
evidence the blinded reviewer and the operator see — never the model's own description.

These models cross the Temporal boundary, so new fields get defaults. No I/O here.
"""

from __future__ import annotations

from typing import Final

from pydantic import BaseModel, ConfigDict, Field

from contracts.config import RepositoryConfig
from contracts.worktree import AppliedPatch, ChangedFile, ChangeEvidence, NumstatEntry, WorktreeAttempt

PATCH_EXECUTOR = "patch"
"""The executor that applies the model's unified diff with git (the default for a repository)."""
COMMAND_EXECUTOR = "command"
"""The executor that runs the repository's external agent (its captured argument vector) in the
worktree; the agent makes the change itself."""

MAX_COMMAND_OUTPUT_BYTES: Final = 64 * 1024
"""Most bytes the agent may write to stdout, and to stderr; more fails closed
(``command_output_too_large``), never cut silently."""


def command_task_text(task: str, evidence_refs: list[str], stop_conditions: list[str]) -> str:
    """The plain text the ``command`` executor's agent gets on stdin: the contract's task, its evidence
    ids and the stop rule — never a path or a command taken from the work item."""
    lines = ["# Task", task.strip(), "", "# Evidence ids"]
    lines += [f"- {ref}" for ref in evidence_refs] or ["- (none)"]
    lines += [
        "",
        "# Stop rule",
        "Change files in this working directory only. Do not commit, create branches or tags, push, or "
        "touch anything outside it. Stop rather than widen the scope of the task.",
    ]
    lines += [f"- {condition}" for condition in stop_conditions]
    return "\n".join(lines) + "\n"


class CommandReport(BaseModel):
    """What the ``command`` executor's agent did: its exit status (``None`` when it was killed before it
    exited, negative for a signal), wall-clock duration, whether it ran confined (``confined``: in the
    sandbox, ``confinement`` saying how — or, when ``False``, why not), whether it ran in its own
    network namespace (``False``: it was not network-isolated — granted, or isolation is unavailable
    on the worker), and its stdout and stderr (at most :data:`MAX_COMMAND_OUTPUT_BYTES` each, decoded
    with backslash escapes; ``*_bytes`` counts what was read). A report recorded before commands were
    confined decodes with ``confined`` false, which is what they were."""

    model_config = ConfigDict(frozen=True)

    exit_status: int | None = None
    duration_seconds: float = Field(default=0.0, ge=0)
    confined: bool = False
    confinement: str = ""
    network_isolated: bool = False
    network_granted: bool = False
    timeout_seconds: float = Field(default=0.0, ge=0)
    timed_out: bool = False
    stdout: str = ""
    stderr: str = ""
    stdout_bytes: int = Field(default=0, ge=0)
    stderr_bytes: int = Field(default=0, ge=0)
    output_too_large: bool = False


class VerificationResult(BaseModel):
    """One of a pr_ready run's ``verify`` commands, run in the worktree after the change (test
    evidence): its argument vector, exit status (``None`` when killed before it exited), wall-clock
    duration, whether and how it was confined (as :class:`CommandReport`), whether it was
    network-isolated, and its stdout and stderr (at most :data:`MAX_COMMAND_OUTPUT_BYTES` each). A
    non-zero exit does not fail the run: it is evidence."""

    model_config = ConfigDict(frozen=True)

    argv: list[str]
    exit_status: int | None = None
    duration_seconds: float = Field(default=0.0, ge=0)
    confined: bool = False
    confinement: str = ""
    network_isolated: bool = False
    timeout_seconds: float = Field(default=0.0, ge=0)
    timed_out: bool = False
    stdout: str = ""
    stderr: str = ""
    stdout_bytes: int = Field(default=0, ge=0)
    stderr_bytes: int = Field(default=0, ge=0)
    output_too_large: bool = False


class PrReadyPatch(BaseModel):
    """The complete patch file of a pr_ready run (``git diff --binary --full-index <base>``, untracked
    files included): its sha256, size and path in the state directory (``show --recovery`` only)."""

    model_config = ConfigDict(frozen=True)

    sha256: str
    size_bytes: int = Field(ge=0)
    path: str


class ChangeUnderReview(BaseModel):
    """The change a reviewer of a worktree run is given: git's file list, numstat and full diff
    against the base commit (inline only: a change too big for a review request fails the run)."""

    model_config = ConfigDict(frozen=True)

    base_commit: str
    files: list[ChangedFile]
    numstat: list[NumstatEntry]
    diff: str
    diff_sha256: str
    verification: list[VerificationResult] = Field(default_factory=list)
    """The pr_ready run's verification commands and what they did (empty for a worktree run)."""

    @classmethod
    def from_evidence(
        cls, evidence: ChangeEvidence, verification: list[VerificationResult] | None = None
    ) -> ChangeUnderReview:
        """The reviewable form of ``evidence``. Raises ``ValueError`` when its diff is stored by
        reference (over 256 KiB or not UTF-8): it cannot be put in front of a reviewer."""
        if evidence.diff is None:
            raise ValueError(
                f"the change's diff is {evidence.diff_bytes} bytes or not UTF-8 text, stored by "
                "reference; it does not fit a review request"
            )
        return cls(
            base_commit=evidence.base_commit,
            files=evidence.files,
            numstat=evidence.numstat,
            diff=evidence.diff,
            diff_sha256=evidence.diff_sha256,
            verification=list(verification or []),
        )


class ExecuteAttemptRequest(BaseModel):
    """Input of ``execute_worktree_attempt``: apply ``patch`` to a fresh worktree of the allow-listed
    repository ``repo_alias`` at ``base_commit``, for run ``run_id``.

    With ``executor`` ``command``: ``repository_config`` is the contract's captured configuration (its
    ``command``, ``env`` and ``model_credentials`` names, ``network``, ``allow_unconfined`` and
    timeout), ``task_text`` the agent's stdin
    (:func:`command_task_text`) and ``command_timeout_seconds`` the agent's wall-clock budget (the
    captured timeout, bounded by the run's remaining budget); ``patch`` is unused."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    repo_alias: str
    base_commit: str
    patch: str
    executor: str = PATCH_EXECUTOR
    repository_config: RepositoryConfig | None = None
    task_text: str = ""
    command_timeout_seconds: float | None = None
    pr_ready: bool = False
    """A pr_ready run: after the checks, run ``verify`` (the captured configuration's commands, each
    bounded by ``verify_timeout_seconds``), check again, and write the complete patch file."""
    verify: list[list[str]] = Field(default_factory=list)
    verify_timeout_seconds: float | None = None
    """Each verify command's wall-clock bound (the captured ``command_timeout_seconds``)."""
    verify_budget_seconds: float | None = None
    """What is left of the run's budget for all verify commands together."""
    allow_unconfined: bool = False
    """The captured configuration's ``allow_unconfined``: the agent and verify commands may run without
    the sandbox when the worker cannot set it up (otherwise the attempt fails
    ``confinement_unavailable``). False for a request recorded before confinement existed."""


class WorktreeExecution(BaseModel):
    """Result of ``execute_worktree_attempt``: the attempt (its worktree), the applied patch and the
    evidence of what changed, computed by git. ``execution_attempt`` is the claimed attempt number
    (the activity's attempt: a retry claims the next one and never reuses a worktree)."""

    model_config = ConfigDict(frozen=True)

    attempt: WorktreeAttempt
    applied: AppliedPatch | None
    """The applied patch (``None`` for the ``command`` executor: the agent made the change)."""
    evidence: ChangeEvidence
    execution_attempt: int = Field(default=1, ge=1)
    host: str | None = None
    """The host whose worker made the worktree (housekeeping prunes it there)."""
    command: CommandReport | None = None
    """What the ``command`` executor's agent did (``None`` for the patch executor)."""
    verification: list[VerificationResult] = Field(default_factory=list)
    """A pr_ready run's verification commands (test evidence)."""
    pr_patch: PrReadyPatch | None = None
    """A pr_ready run's complete patch file."""


class WorktreeLocation(BaseModel):
    """Where an attempt's worktree is kept (``show --recovery`` only): its path, its evidence
    directory, the repository it belongs to and the detached base commit it was made at (it has no
    branch: ``git worktree add --detach``). ``host`` is the host name of the worker whose disk holds
    it (``None`` when not recorded): ``specialists worktrees prune`` removes it there."""

    model_config = ConfigDict(frozen=True)

    attempt: int = Field(ge=1)
    worktree: str
    evidence_dir: str | None = None
    repository: str | None = None
    base_commit: str
    host: str | None = None

    @classmethod
    def of_attempt(cls, attempt: WorktreeAttempt, host: str | None = None) -> WorktreeLocation:
        """Where ``attempt``'s worktree is kept, made on ``host``."""
        return cls(
            attempt=attempt.attempt,
            worktree=str(attempt.worktree),
            evidence_dir=str(attempt.evidence_dir),
            repository=str(attempt.repository),
            base_commit=attempt.base_commit,
            host=host,
        )


class ExecutionRecord(BaseModel):
    """What a run keeps of its execution: who executed it and when (ISO), the change (when the
    attempt passed its checks), the patch's sha256, and where the worktree is kept — withheld from
    ``show`` and ``--json`` unless ``--recovery`` is asked for."""

    model_config = ConfigDict(frozen=True)

    actor: str
    executor: str = PATCH_EXECUTOR
    evidence: ChangeEvidence | None = None
    patch_sha256: str | None = None
    location: WorktreeLocation | None = None
    failure_type: str | None = None
    command: CommandReport | None = None
    """The ``command`` executor's report (exit status, duration, network isolation, output)."""
    verification: list[VerificationResult] = Field(default_factory=list)
    """A pr_ready run's verification commands and what they did (test evidence)."""
    pr_patch: PrReadyPatch | None = None
    """A pr_ready run's complete patch file (its path withheld unless ``--recovery``)."""
