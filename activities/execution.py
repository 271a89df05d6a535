"""Activity ``execute_worktree_attempt``: apply an approved run's patch in a fresh worktree, fail closed.

One activity does the whole attempt — claim, worktree, patch, checks, evidence — because the worktree
lives on the disk of the worker that made it: split over several activities, a later step could land
on another machine. The steps are those of :mod:`activities.worktree_lifecycle`,
:mod:`activities.patch_checks` and :mod:`activities.change_evidence` (docs/architecture.md "Worktree
execution"):

1. claim the execution attempt in the store (run id + the activity's attempt number), so two worker
   processes never run the same attempt — a duplicate is refused with ``attempt_claimed``;
2. create ``<state>/worktrees/<run>/attempt-<n>`` (``n``: the claimed attempt) as a detached worktree
   at the contract's base commit — an unavailable base commit fails closed;
3. check the patch strictly and apply it with ``git apply`` — or, for a run that captured the
   ``command`` executor, run the repository's agent in the worktree, confined by bubblewrap
   (:mod:`activities.command_executor`, :mod:`activities.sandbox`);
4. check the result (HEAD, commits and refs in the worktree and the source repository, ``git diff
   --check``, at most 40 changed paths, nothing outside the worktree) and collect git's evidence;
5. for a pr_ready run: run the captured ``verify`` commands in the worktree (no network, reduced
   environment, bounded; a non-zero exit is evidence), check and collect again — evidence that differs
   fails ``verification_changed_tree`` — and write the complete patch file (``pr-ready.patch``).

Before anything is claimed or made, a run that will run commands (the agent, verify commands) is
checked: the captured configuration must keep the environment rules (``invalid_repository_config``
otherwise: defence in depth, they were checked at registration and capture) and the worker must be
able to confine commands, unless the configuration accepts running unconfined
(``confinement_unavailable`` otherwise; nothing runs).

The activity heartbeats from a thread of its own for as long as it runs (:func:`keeps_heartbeating`),
whatever step it is in — git on a large repository, the agent, verify commands — so a worker lost in
the middle of an attempt is noticed at the heartbeat timeout and the retry claims the next attempt on
another worker within seconds, not at the end of the attempt's whole timeout.

Any fail-closed rule raises a non-retryable ``ApplicationError`` whose ``type`` is the rule
(``contracts.worktree.ExecutionFailure``) and whose one detail (``contracts.failures.WorktreeFailureDetail``)
says where the preserved worktree is.
Only an unreachable store or a git failure is retryable; a retry claims the next attempt and makes a
new worktree beside the old one, never reusing it.
"""

from __future__ import annotations

import contextvars
import functools
import os
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.change_evidence import check_and_collect, write_pr_ready_patch
from activities.command_executor import (
    CommandFailed,
    Sandbox,
    run_agent_command,
    run_verification_command,
)
from activities.config import ActivityConfig
from activities.errors import failure, refusal
from activities.patch_checks import apply_patch
from activities.store_access import SharedStore
from activities.worktree_lifecycle import create_attempt_worktree
from contracts.config import RepositoryExecutor, environment_rule_violations
from contracts.errors import ErrorType, NotFound, OperatorError, ServiceUnavailable
from contracts.execution import (
    COMMAND_EXECUTOR,
    PATCH_EXECUTOR,
    CommandReport,
    ExecuteAttemptRequest,
    PrReadyPatch,
    VerificationResult,
    WorktreeExecution,
    WorktreeLocation,
)
from contracts.failures import WorktreeFailureDetail
from contracts.temporal_names import ActivityName
from contracts.worktree import (
    AppliedPatch,
    ChangeEvidence,
    ExecutionFailure,
    WorktreeAttempt,
    WorktreeExecutionFailed,
)
from runtime.logs import run_logger
from store.repositories import require_active

P = ParamSpec("P")
R = TypeVar("R")

HEARTBEAT_EVERY_SECONDS = 1.0
"""How often an attempt heartbeats (the SDK sends at most one per 80 % of the heartbeat timeout)."""


def keeps_heartbeating(function: Callable[P, R]) -> Callable[P, R]:
    """Make a sync activity heartbeat every :data:`HEARTBEAT_EVERY_SECONDS` from a thread of its own
    while it runs: the heartbeats say that its worker is alive, not that a step progresses (the
    activity's start-to-close timeout bounds a step that hangs)."""

    @functools.wraps(function)
    def beating(*args: P.args, **kwargs: P.kwargs) -> R:
        done = threading.Event()

        def beat() -> None:
            while not done.wait(HEARTBEAT_EVERY_SECONDS):
                activity.heartbeat()

        # The activity's context (and so its heartbeat) belongs to this thread: copy it over.
        beater = threading.Thread(
            target=contextvars.copy_context().run, args=(beat,), name="attempt-heartbeat", daemon=True
        )
        beater.start()
        try:
            return function(*args, **kwargs)
        finally:
            done.set()
            beater.join()

    return beating


def _worker_identity() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"[:200]


class ExecutionActivities:
    """``execute_worktree_attempt`` bound to the deployment's state directory and store;
    ``bwrap_path`` is the bubblewrap program that confines commands (``None``: ``bwrap`` found on
    ``/usr/local/bin:/usr/bin:/bin`` when an attempt needs it)."""

    def __init__(self, config: ActivityConfig, store: SharedStore, *, bwrap_path: str | None = None) -> None:
        self._config = config
        self._store = store
        self._bwrap_path = bwrap_path

    def _store_claim(self, request: ExecuteAttemptRequest, execution_attempt: int) -> None:
        """Claim this execution attempt in the store; raises the refusal (``attempt_claimed``)."""
        try:
            self._store.get().claim_worktree_attempt(
                request.run_id, execution_attempt, _worker_identity(), worktree_attempt=execution_attempt
            )
        except OperatorError as error:
            raise refusal(error) from None

    @activity.defn(name=ActivityName.EXECUTE_WORKTREE_ATTEMPT)
    @keeps_heartbeating
    def execute_worktree_attempt(self, request: ExecuteAttemptRequest) -> WorktreeExecution:
        """Claim, create, apply, check and collect one execution attempt of ``request.run_id``.

        Returns the attempt, the applied patch (``None`` for the ``command`` executor, whose agent's
        :class:`CommandReport` is ``command``) and git's evidence. Raises ``ApplicationError``:
        a fail-closed type (``base_commit_unavailable``, ``patch_invalid``, ``patch_does_not_apply``,
        ``command_timeout``, ``command_output_too_large``, ``command_failed``,
        ``confinement_unavailable`` (also before anything is made, then without a detail),
        ``head_moved``, ``new_commit``, ``new_ref``, ``diff_check_failed``, ``too_many_files``,
        ``path_outside_worktree``, ``verification_changed_tree``) whose detail, whenever the worktree
        directory exists (failed or not, it is kept), is a ``WorktreeFailureDetail``: the worktree's
        :class:`WorktreeLocation` and, once the agent ran, its :class:`CommandReport`; messages name
        the state directory as ``<state>``; ``attempt_claimed``; ``repository_unavailable`` (the alias
        is not allow-listed); ``invalid_repository_config`` (the captured configuration breaks
        the environment rules); ``execution_failed`` (no state directory, unknown executor); retryable
        ``ServiceUnavailable`` codes when the store or git cannot be reached.
        """
        info = activity.info()
        log = run_logger(request.run_id, activity="execute_worktree_attempt", attempt=info.attempt)
        config = request.repository_config
        if request.executor == COMMAND_EXECUTOR and (
            config is None or config.executor is not RepositoryExecutor.COMMAND or not config.command
        ):
            raise ApplicationError(
                "the command executor needs the captured repository configuration and its command",
                type=ErrorType.EXECUTION_FAILED,
                non_retryable=True,
            )
        if request.executor not in (PATCH_EXECUTOR, COMMAND_EXECUTOR):
            raise ApplicationError(
                f"executor {request.executor!r} is not available "
                f"({PATCH_EXECUTOR!r} or {COMMAND_EXECUTOR!r})",
                type=ErrorType.EXECUTION_FAILED,
                non_retryable=True,
            )
        state_dir = self._config.state_dir
        if state_dir is None:
            raise ApplicationError(
                "this worker has no state directory, so it cannot make worktrees",
                type=ErrorType.EXECUTION_FAILED,
                non_retryable=True,
            )
        try:
            # A deactivated or unverified repository is never executed in (repository_deactivated,
            # configuration_unverified): docs/architecture.md "Configuration".
            repository = Path(require_active(self._store.get().get_repository(request.repo_alias)).path)
        except NotFound as error:
            raise ApplicationError(
                f"repository {request.repo_alias!r} is not allow-listed (never registered here, or "
                f"removed): {error.message}",
                type=ErrorType.REPOSITORY_UNAVAILABLE,
                non_retryable=True,
            ) from None
        except OperatorError as error:
            raise refusal(error) from None
        sandbox = self._sandbox(request, state_dir)
        self._store_claim(request, info.attempt)
        # Known before git makes it, so every failure after this point can say where it is kept.
        planned = WorktreeLocation(
            attempt=info.attempt,
            worktree=str(state_dir.resolve() / "worktrees" / request.run_id / f"attempt-{info.attempt}"),
            repository=str(repository),
            base_commit=request.base_commit,
            host=socket.gethostname(),
        )
        report: CommandReport | None = None
        verification: list[VerificationResult] = []
        pr_patch: PrReadyPatch | None = None
        try:
            attempt = create_attempt_worktree(
                repository, request.base_commit, state_dir, request.run_id, attempt=info.attempt
            )
            log.info("worktree_created", worktree_attempt=attempt.attempt, base_commit=attempt.base_commit)
            applied: AppliedPatch | None = None
            if request.executor == COMMAND_EXECUTOR:
                assert config is not None
                assert sandbox is not None
                report = run_agent_command(
                    attempt,
                    config,
                    request.task_text,
                    sandbox=sandbox,
                    timeout_seconds=request.command_timeout_seconds,
                    heartbeat=activity.heartbeat,
                )
                log.info(
                    "command_finished",
                    exit_status=report.exit_status,
                    duration_seconds=report.duration_seconds,
                    confined=report.confined,
                    network_isolated=report.network_isolated,
                )
            else:
                applied = apply_patch(attempt, request.patch)
            evidence = check_and_collect(attempt)
            if request.pr_ready:
                verification = self._verify(attempt, request, sandbox, log)
                after = check_and_collect(attempt)
                if _fingerprint(after) != _fingerprint(evidence):
                    raise WorktreeExecutionFailed(
                        ExecutionFailure.VERIFICATION_CHANGED_TREE,
                        "a verify command changed the worktree: git's evidence after verification "
                        f"(diff sha256 {after.diff_sha256}) differs from the evidence before it "
                        f"(diff sha256 {evidence.diff_sha256})",
                    )
                path, digest, size = write_pr_ready_patch(attempt)
                pr_patch = PrReadyPatch(sha256=digest, size_bytes=size, path=str(path))
                log.info("pr_ready_patch_written", sha256=digest, size_bytes=size)
        except OperatorError as error:  # fail closed (or a refused input): the worktree stays
            log.warning("worktree_failed_closed", error_type=error.code)
            failed_report = error.report if isinstance(error, CommandFailed) else report
            detail = (
                WorktreeFailureDetail(location=planned, command=failed_report)
                if Path(planned.worktree).exists()
                else None
            )
            raise failure(
                # Messages name paths inside the worktree; the state directory itself is withheld.
                error.message.replace(str(state_dir.resolve()), "<state>"),
                detail,
                error_type=error.code,
                non_retryable=not isinstance(error, ServiceUnavailable),
            ) from None
        log.info(
            "worktree_change_collected",
            files_changed=evidence.files_changed,
            diff_bytes=evidence.diff_bytes,
            patch_sha256=applied.patch_sha256 if applied is not None else None,
        )
        return WorktreeExecution(
            attempt=attempt,
            applied=applied,
            evidence=evidence,
            execution_attempt=info.attempt,
            host=planned.host,
            command=report,
            verification=verification,
            pr_patch=pr_patch,
        )

    def _sandbox(self, request: ExecuteAttemptRequest, state_dir: Path) -> Sandbox | None:
        """The sandbox of an attempt that runs commands (``None`` for one that runs none), once the
        captured configuration was found to keep the environment rules and the worker to be able to
        confine them — or the configuration to accept running unconfined. Raises
        ``ApplicationError`` ``invalid_repository_config`` or ``confinement_unavailable``."""
        config = request.repository_config
        runs_agent = request.executor == COMMAND_EXECUTOR
        if not runs_agent and not (request.pr_ready and request.verify):
            return None
        if runs_agent and config is not None and (violations := environment_rule_violations(config)):
            raise ApplicationError(
                "the captured repository configuration breaks the environment rules: "
                + "; ".join(violations),
                type="invalid_repository_config",
                non_retryable=True,
            )
        try:
            hidden = [state_dir, *(Path(r.path) for r in self._store.get().list_repositories())]
        except OperatorError as error:
            raise refusal(error) from None
        sandbox = Sandbox.probed(
            self._bwrap_path,
            allow_unconfined=request.allow_unconfined,
            hidden=tuple([*hidden, Path.home()]),
        )
        try:
            sandbox.require()
        except OperatorError as error:
            raise refusal(error) from None
        return sandbox

    def _verify(
        self, attempt: WorktreeAttempt, request: ExecuteAttemptRequest, sandbox: Sandbox | None, log: Any
    ) -> list[VerificationResult]:
        """Run the pr_ready run's verify commands one after another; each bounded by its own timeout
        and by what is left of the budget. A non-zero exit is evidence; a timeout or too much output
        raises :class:`CommandFailed`."""
        results: list[VerificationResult] = []
        budget = request.verify_budget_seconds
        started = time.monotonic()
        for argv in request.verify:
            bound = float(request.verify_timeout_seconds or 600)
            if budget is not None:
                bound = min(bound, budget - (time.monotonic() - started))
            if bound <= 0:
                raise CommandFailed(
                    ExecutionFailure.COMMAND_TIMEOUT,
                    f"no budget is left for the verify command {argv[0]!r}",
                    CommandReport(timed_out=True),
                )
            assert sandbox is not None
            result = run_verification_command(
                attempt, list(argv), sandbox=sandbox, timeout_seconds=bound, heartbeat=activity.heartbeat
            )
            log.info(
                "verification_finished",
                argv0=argv[0],
                exit_status=result.exit_status,
                duration_seconds=result.duration_seconds,
                confined=result.confined,
            )
            results.append(result)
        return results


def _fingerprint(evidence: ChangeEvidence) -> tuple[object, ...]:
    """What must not change while verify commands run: git's diff and file list."""
    return (
        evidence.diff_sha256,
        evidence.diff_bytes,
        tuple(entry.model_dump_json() for entry in evidence.files),
    )
