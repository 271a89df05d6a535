"""Activity ``run_probe``: run an operator-approved probe request, confined, in a fresh worktree of the
run's repository, and return what it did as operator-run evidence (docs/architecture.md "Probe
requests").

One activity does the whole probe — the worktree lives on the disk of the worker that made it:

1. the repository must still be allow-listed and active (``repository_unavailable`` otherwise);
2. the commit is the contract's base commit when it has one, else the repository's base branch head
   resolved now (both recorded in the evidence);
3. the worker must be able to confine commands (``confinement_unavailable`` otherwise, before anything
   is made: a probe never runs unconfined, whatever the repository configuration says);
4. a fresh detached worktree at that commit, ``<state>/worktrees/<run>-probe-<index>/attempt-<n>``
   (:func:`activities.worktree_lifecycle.create_attempt_worktree`; kept afterwards);
5. ``cwd`` resolved on disk must be a directory inside the worktree (a symlink out of it is
   ``probe_cwd_outside_worktree``, a missing one ``probe_cwd_missing``);
6. the argument vector runs as given (no shell) in the sandbox verify commands use: no network,
   reduced environment, a wall-clock budget, stdout and stderr bounded (more fails
   ``command_output_too_large``; nothing is cut); a non-zero exit is evidence, not a failure;
7. git's status of the worktree afterwards is the list of changed paths (more than
   :data:`~contracts.probes.MAX_CHANGED_PATHS` fails ``probe_too_many_changes``).

The activity heartbeats from a thread of its own while it runs (a cancel reaches it and a lost
worker is noticed in seconds). Every failure is non-retryable except an unreachable store or git; its
detail (:class:`contracts.failures.ProbeFailureDetail`) carries what is known.
"""

from __future__ import annotations

import hashlib
import socket
from pathlib import Path

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.command_executor import CommandFailed, Sandbox, run_probe_command
from activities.config import ActivityConfig
from activities.errors import failure, refusal
from activities.execution import keeps_heartbeating
from activities.store_access import SharedStore
from activities.worktree_lifecycle import create_attempt_worktree, open_attempt
from contracts.errors import ErrorType, NotFound, OperatorError, ServiceUnavailable
from contracts.execution import MAX_COMMAND_OUTPUT_BYTES
from contracts.failures import ProbeFailureDetail
from contracts.probes import MAX_CHANGED_PATHS, ChangedPath, ProbeEvidence, RunProbeRequest
from contracts.temporal_names import ActivityName
from contracts.worktree import WorktreeAttempt
from runtime.git import split_z
from runtime.git_repository import base_commit_of
from runtime.logs import run_logger
from store.repositories import require_active


class ProbeFailed(OperatorError):
    """A probe that could not run to an exit; ``code`` is its error type."""

    exit_code = 4


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def resolve_cwd(worktree: Path, cwd: str) -> Path:
    """``cwd`` (relative, already checked by the contract) resolved inside ``worktree``; raises
    :class:`ProbeFailed` when it resolves outside (a symlink) or is not a directory."""
    root = worktree.resolve()
    target = (root / cwd).resolve()
    if target != root and not target.is_relative_to(root):
        raise ProbeFailed(
            ErrorType.PROBE_CWD_OUTSIDE_WORKTREE,
            f"the probe's cwd {cwd!r} resolves outside the worktree; nothing was run",
        )
    if not target.is_dir():
        raise ProbeFailed(
            ErrorType.PROBE_CWD_MISSING, f"the probe's cwd {cwd!r} is not a directory in the worktree"
        )
    return target


def changed_paths(attempt: WorktreeAttempt) -> list[ChangedPath]:
    """git's status of ``attempt``'s worktree: every changed, deleted or untracked path (untracked
    directories listed file by file)."""
    tree = open_attempt(attempt)
    output = tree.ok("status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames")
    paths = []
    for entry in split_z(output):
        text = entry.decode("utf-8", "backslashreplace")
        if len(text) > 3:
            paths.append(ChangedPath(status=text[:2], path=text[3:]))
    return paths


class ProbeActivities:
    """``run_probe`` bound to the deployment's state directory and store (``bwrap_path``: the
    bubblewrap program; ``None``: found on the safe PATH)."""

    def __init__(self, config: ActivityConfig, store: SharedStore, *, bwrap_path: str | None = None) -> None:
        self._config = config
        self._store = store
        self._bwrap_path = bwrap_path

    @activity.defn(name=ActivityName.RUN_PROBE)
    @keeps_heartbeating
    def run_probe(self, request: RunProbeRequest) -> ProbeEvidence:
        """Run the approved probe; its evidence. Raises a non-retryable ``ApplicationError`` typed
        ``repository_unavailable``, ``confinement_unavailable``, ``base_commit_unavailable``,
        ``probe_cwd_outside_worktree``, ``probe_cwd_missing``, ``command_timeout``,
        ``command_output_too_large``, ``command_failed``, ``probe_too_many_changes`` or
        ``execution_failed`` (no state directory), with a :class:`ProbeFailureDetail` once the commit
        is known; retryable when the store or git cannot be reached."""
        info = activity.info()
        log = run_logger(request.run_id, activity="run_probe", probe=request.index, attempt=info.attempt)
        state_dir = self._config.state_dir
        if state_dir is None:
            raise ApplicationError(
                "this worker has no state directory, so it cannot make worktrees",
                type=ErrorType.EXECUTION_FAILED,
                non_retryable=True,
            )
        try:
            record = require_active(self._store.get().get_repository(request.repo_alias))
        except NotFound as error:
            raise ApplicationError(
                f"repository {request.repo_alias!r} is not allow-listed (never registered here, or "
                f"removed): {error.message}",
                type=ErrorType.REPOSITORY_UNAVAILABLE,
                non_retryable=True,
            ) from None
        except OperatorError as error:
            raise refusal(error) from None
        try:
            if request.base_commit is not None:
                commit, source, branch = request.base_commit, "base_commit", None
            else:
                commit, source, branch = base_commit_of(record), "branch_head", record.default_branch
            hidden = [state_dir, *(Path(r.path) for r in self._store.get().list_repositories())]
        except OperatorError as error:
            raise refusal(error) from None
        evidence = ProbeEvidence(
            commit=commit,
            commit_source=source,
            branch=branch,
            argv=list(request.probe.argv),
            cwd=request.probe.cwd,
            host=socket.gethostname(),
        )
        sandbox = Sandbox.probed(self._bwrap_path, hidden=tuple([*hidden, Path.home()]))
        try:
            sandbox.require_confinement("a probe")
        except OperatorError as error:  # never unconfined: nothing is made
            raise failure(
                error.message, ProbeFailureDetail(evidence=evidence), error_type=error.code
            ) from None
        try:
            attempt = create_attempt_worktree(
                Path(record.path), commit, state_dir, f"{request.run_id}-probe-{request.index}", info.attempt
            )
            evidence = evidence.model_copy(update={"worktree": str(attempt.worktree)})
            cwd = resolve_cwd(attempt.worktree, request.probe.cwd)
            stdin_text = "".join(line + "\n" for line in request.probe.inputs)
            result = run_probe_command(
                attempt,
                list(request.probe.argv),
                cwd=cwd,
                stdin_text=stdin_text,
                sandbox=sandbox,
                timeout_seconds=request.timeout_seconds,
                heartbeat=activity.heartbeat,
            )
            evidence = evidence.model_copy(update=_ran(result.model_dump()))
            changed = changed_paths(attempt)
            evidence = evidence.model_copy(
                update={"changed": changed[:MAX_CHANGED_PATHS], "changed_count": len(changed)}
            )
            if len(changed) > MAX_CHANGED_PATHS:
                raise ProbeFailed(
                    ErrorType.PROBE_TOO_MANY_CHANGES,
                    f"the probe left {len(changed)} changed paths in its worktree; at most "
                    f"{MAX_CHANGED_PATHS} are recorded, so the probe is failed rather than its list cut",
                )
        except OperatorError as error:
            if isinstance(error, CommandFailed):
                evidence = evidence.model_copy(update=_ran(error.report.model_dump()))
            log.warning("probe_failed", error_type=error.code)
            raise failure(
                error.message.replace(str(state_dir.resolve()), "<state>"),
                ProbeFailureDetail(evidence=evidence),
                error_type=error.code,
                non_retryable=not isinstance(error, ServiceUnavailable),
            ) from None
        log.info(
            "probe_finished",
            exit_status=evidence.exit_status,
            duration_seconds=evidence.duration_seconds,
            changed=evidence.changed_count,
        )
        return evidence


def _ran(fields: dict[str, object]) -> dict[str, object]:
    """The :class:`ProbeEvidence` fields of a command's report or result."""
    stdout, stderr = str(fields.get("stdout", "")), str(fields.get("stderr", ""))
    return {
        "exit_status": fields.get("exit_status"),
        "timed_out": fields.get("timed_out", False),
        "duration_seconds": fields.get("duration_seconds", 0.0),
        "stdout": stdout,
        "stderr": stderr,
        "stdout_bytes": fields.get("stdout_bytes", 0),
        "stderr_bytes": fields.get("stderr_bytes", 0),
        "stdout_sha256": _sha256(stdout),
        "stderr_sha256": _sha256(stderr),
        "output_bound_bytes": MAX_COMMAND_OUTPUT_BYTES,
        "confined": fields.get("confined", False),
        "confinement": fields.get("confinement", ""),
        "network_isolated": fields.get("network_isolated", False),
    }
