"""Probe requests (docs/architecture.md "Probe requests"): a read_only run's analysis may ask for
commands it would like someone to run — a hypothesis, an exact argument vector, a working directory
inside the repository, stdin lines, what would confirm and what would falsify it, what it expects
the command to change. The pass never runs one. An operator may approve a probe (a protected action
bound to the probe's digest); it then runs confined in a fresh worktree of the run's repository and
what it did is recorded as operator-run evidence, kept apart from the specialist's conclusions.

Model output is untrusted: every field here is data. ``argv[0]`` is never looked up through a shell,
nothing is joined into a shell string, and ``cwd`` is only a relative path checked here and again,
resolved on disk, by the activity that runs the probe.
"""

from __future__ import annotations

import datetime as dt
from enum import StrEnum
from typing import Annotated, Any, Final

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

from contracts.execution import MAX_COMMAND_OUTPUT_BYTES
from contracts.hashing import canonical_sha256
from contracts.proofs import ActionProof

MAX_PROBES: Final = 5
"""Most probe requests one analysis may return."""
MAX_ARGV: Final = 64
MAX_ARG_CHARS: Final = 1_000
MAX_INPUT_LINES: Final = 50
MAX_CHANGED_PATHS: Final = 200
"""Most paths a probe may leave changed in its worktree; more fails it (``probe_too_many_changes``),
the count recorded — a list is never cut short silently."""
PROBE_TIMEOUT_SECONDS: Final = 120.0
"""The wall-clock budget of one probe's command (killed, ``command_timeout``, past it)."""
PROBE_DIGEST_DOMAIN: Final = "specialists/probe/v1"


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("a probe argument may not contain a NUL character")
    return value


def _one_line(value: str) -> str:
    if any(ch in value for ch in "\x00\r\n"):
        raise ValueError("an input line may not contain NUL, CR or LF")
    return value


def _relative_path(value: str) -> str:
    """``.`` or a relative POSIX path of plain segments: no absolute path, no ``..``, no empty or
    ``.`` segment inside, no backslash, no NUL or control character."""
    if value == ".":
        return value
    if value.startswith("/"):
        raise ValueError(f"cwd {value!r} is absolute: give a path relative to the worktree")
    if any(ord(ch) < 32 or ch in "\\\x7f" for ch in value):
        raise ValueError("cwd may not contain control characters or backslashes")
    for segment in value.split("/"):
        if segment in ("", ".", ".."):
            raise ValueError(f"cwd {value!r} has an empty, '.' or '..' segment")
    return value


Arg = Annotated[str, StringConstraints(min_length=1, max_length=MAX_ARG_CHARS), AfterValidator(_no_nul)]
"""One argument; the first names the program (run as given, never through a shell)."""
InputLine = Annotated[str, StringConstraints(max_length=500), AfterValidator(_one_line)]
RelativeDir = Annotated[str, StringConstraints(min_length=1, max_length=500), AfterValidator(_relative_path)]
Text = Annotated[str, StringConstraints(min_length=1, max_length=2_000)]


class ProbeRequest(BaseModel):
    """One command an analysis asks someone to run (never run by the pass itself)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    hypothesis: Text
    argv: Annotated[list[Arg], Field(min_length=1, max_length=MAX_ARGV)]
    cwd: RelativeDir = "."
    inputs: Annotated[list[InputLine], Field(max_length=MAX_INPUT_LINES)] = []
    """Lines written to the command's stdin (each followed by a line feed); none: stdin is empty."""
    expected_confirming: Text
    expected_falsifying: Text
    anticipated_effects: Text


def probe_digest(run_id: str, contract_sha256: str, index: int, probe: ProbeRequest) -> str:
    """The digest an approval binds to: RFC 8785 canonical JSON sha256 of the run, its contract
    digest, the probe's index (from 1) and the probe itself."""
    return canonical_sha256(
        {
            "domain": PROBE_DIGEST_DOMAIN,
            "run_id": run_id,
            "contract_sha256": contract_sha256,
            "index": index,
            "probe": probe.model_dump(mode="json"),
        }
    )


class ProbeStatus(StrEnum):
    """Where a probe is: requested by the analysis, approved by an operator, running, completed (it
    ran; its exit status is evidence, whatever it is) or failed (it could not run to an exit:
    confinement unavailable, timeout, output over the bound, a cwd outside the worktree, ...)."""

    REQUESTED = "requested"
    APPROVED = "approved"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"


class ChangedPath(BaseModel):
    """One path git reports changed in the probe's worktree after it ran (``git status``)."""

    model_config = ConfigDict(frozen=True)

    path: str
    status: str
    """git's two-letter porcelain status (``??`` untracked, `` M`` modified, ...)."""


class ProbeEvidence(BaseModel):
    """What an approved probe did, as the worker saw it — operator-run evidence, never the model's
    claim. ``commit`` is the commit the worktree was made at (``commit_source``: the contract's
    ``base_commit``, or ``branch_head`` — the repository's base branch resolved when the probe ran).
    stdout and stderr are complete (at most ``MAX_COMMAND_OUTPUT_BYTES`` each: more fails the probe,
    nothing is cut); ``changed`` is git's status of the worktree afterwards."""

    model_config = ConfigDict(frozen=True)

    commit: str
    commit_source: str
    branch: str | None = None
    argv: list[str]
    cwd: str
    worktree: str = ""
    host: str = ""
    exit_status: int | None = None
    timed_out: bool = False
    duration_seconds: float = 0.0
    stdout: str = ""
    stderr: str = ""
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    stdout_sha256: str = ""
    stderr_sha256: str = ""
    output_bound_bytes: int = MAX_COMMAND_OUTPUT_BYTES
    confined: bool = False
    confinement: str = ""
    network_isolated: bool = False
    changed: list[ChangedPath] = []
    changed_count: int = 0


class ProbeRecord(BaseModel):
    """One probe request of a run and what became of it (``RunView.probes``)."""

    model_config = ConfigDict(frozen=True)

    index: int
    """From 1, in the order the analysis returned them."""
    sha256: str
    """:func:`probe_digest`: what an approval names and its proof is bound to."""
    request: ProbeRequest
    status: ProbeStatus = ProbeStatus.REQUESTED
    approved_by: str | None = None
    approved_at: dt.datetime | None = None
    evidence: ProbeEvidence | None = None
    error_type: str | None = None
    error: str | None = None


class ApproveProbeRequest(BaseModel):
    """Update ``approve_probe``: run probe ``index`` of the run, exactly the probe whose digest is
    ``probe_sha256`` (protected: the proof is bound to that digest)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    actor: str
    index: int = Field(ge=1, le=MAX_PROBES)
    probe_sha256: Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
    proof: ActionProof | None = None


class RunProbeRequest(BaseModel):
    """Input of activity ``run_probe``: run ``probe`` (index ``index`` of run ``run_id``) in a fresh
    worktree of ``repo_alias`` at ``base_commit`` (the contract's), or — when ``None`` — at the
    repository's base branch head resolved now."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    index: int
    probe_sha256: str
    probe: ProbeRequest
    repo_alias: str
    base_commit: str | None = None
    timeout_seconds: float = PROBE_TIMEOUT_SECONDS


def probe_records(run_id: str, contract_sha256: str, probes: list[ProbeRequest]) -> list[ProbeRecord]:
    """The records of an analysis's probe requests, each with its digest, all ``requested``."""
    return [
        ProbeRecord(index=index, sha256=probe_digest(run_id, contract_sha256, index, probe), request=probe)
        for index, probe in enumerate(probes, start=1)
    ]


def probe_listing(records: list[ProbeRecord]) -> list[dict[str, Any]]:
    """The ``probes_requested`` audit data: each probe's index, digest and program."""
    return [{"index": r.index, "sha256": r.sha256, "argv0": r.request.argv[0]} for r in records]
