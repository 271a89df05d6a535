"""The one way git is run: :func:`run_git` and :class:`Git` (docs/architecture.md "Worktree execution").

Every git call of the code base — registering a repository, reading evidence at a frozen commit,
verifying catalog sources, making, checking and removing attempt worktrees — goes through here.

**How git is run.** An argument vector (never a shell), a timeout (:class:`GitTimedOut`, code
``git_unavailable``, when it passes; :class:`GitNotFound`, the same code, when git is not on
``PATH``), stdin closed or a given input, stdout captured up to a bound (:class:`GitOutputTooLarge`
beyond it: output is never cut silently) and stderr up to a smaller one (only its first lines are
ever shown), and one pinned environment (:func:`git_environment`): of the caller's environment only
``PATH``, ``HOME`` and ``TMPDIR`` — every inherited ``GIT_*`` variable is dropped
(so nothing can point git at another repository, inject configuration through
``GIT_CONFIG_PARAMETERS``/``GIT_CONFIG_COUNT``, or name an external diff, ssh command, pager or exec
path), and no key or token reaches git or a program it starts. ``GIT_CONFIG_NOSYSTEM=1`` and
``GIT_CONFIG_GLOBAL=/dev/null`` ignore the host's and the user's configuration,
``GIT_ATTR_NOSYSTEM=1`` the system attributes, ``GIT_TERMINAL_PROMPT=0`` never asks for credentials,
``GIT_OPTIONAL_LOCKS=0`` keeps read-only calls from writing the index, ``GIT_NO_REPLACE_OBJECTS=1``
and ``--no-replace-objects`` make ``refs/replace`` unable to swap an object's content,
``GIT_NO_LAZY_FETCH=1`` keeps a partial clone from fetching a missing object, ``--no-pager`` shows
nothing through a pager, ``--literal-pathspecs`` makes path names plain names, and ``LC_ALL=C`` keeps
messages stable.

**Why the user's global configuration is never read**, for any caller: a check must give the same
answer whoever runs it — the worker, or the operator's CLI under another account with another
``~/.gitconfig`` — and the check that registers a repository or verifies catalog sources must judge
the repository exactly as worktree execution later does (which has always ignored it, and whose
results must not depend on it). The only configuration git reads is the repository's own, and the
pins below keep it from running anything. For the same reason ``XDG_CONFIG_HOME``, which only locates
per-user git files, is not passed (registration used to pass it; worktree execution never did), and
``HOME`` reaches git only for ``~`` in paths: with the global configuration, the attributes file and
the excludes file pinned away, no per-user file is read. (``GIT_CONFIG_GLOBAL`` alone is not enough:
git still reads ``$HOME/.config/git/attributes`` and ``$HOME/.config/git/ignore`` unless
``core.attributesFile`` and ``core.excludesFile`` say otherwise, and a ``* -whitespace`` there would
relax ``diff --check``.) One consequence: a ``safe.directory
exception in a user's configuration does not apply, so a repository owned by another user is refused
(as worktree execution always refused it).

**The repository's own configuration cannot run code during these calls.** Command-line ``-c``
settings outrank every configuration file, so each call pins (:data:`PINNED_CONFIG`):
``core.hooksPath=/dev/null`` (no hook: ``post-checkout``, ``reference-transaction``, ``pre-auto-gc``
...), ``core.fsmonitor=false``, ``protocol.allow=never`` (no transport at all, so no lazy fetch of a
partial clone, ``ext::`` command or ssh), ``gc.auto=0``/``maintenance.auto=false``,
``submodule.recurse=false``, ``diff.external=`` (and ``--no-ext-diff``/``--no-textconv`` on every diff
the worktree checks run), signature programs (``gpg.program`` and its ``openpgp``/``x509``/``ssh``
variants set to ``/dev/null``, ``log.showSignature=false``), no pager or editor; clean/smudge/process
*filter* drivers are configured per driver, so a caller working in a worktree lists the drivers the
repository's configuration defines (as seen from the worktree, includes followed) and neutralises each
through ``extra_config`` (``filter.<d>.clean=``, ``.smudge=``, ``.process=``, ``.required=false``:
git runs no filter whose command is empty; see :mod:`activities.worktree_lifecycle`). Output-shaping
settings are pinned too (``core.autocrlf=false``, ``core.safecrlf=false``, ``core.eol=lf``,
``core.symlinks=true``, ``core.whitespace`` at git's defaults plus ``cr-at-eol`` (below),
``diff.noprefix=false``,
``diff.mnemonicPrefix=false``, ``diff.relative=false``, rename and algorithm settings, no colour,
``apply.whitespace=nowarn``, ``apply.ignoreWhitespace=no``, no sparse checkout,
``core.protectNTFS``/``core.protectHFS``), and the worktree checks' diff commands spell out prefixes,
context, algorithm and order on the command line.

**Whitespace rules** (``core.whitespace``, what ``diff --check`` judges): git's defaults
``blank-at-eol``, ``blank-at-eof`` and ``space-before-tab``, plus ``cr-at-eol``, so that a carriage
return just before the line feed is part of the line ending, not trailing whitespace. Without it no
change at all could be made to a file with Windows line endings: every added CRLF line would be
"trailing whitespace". With it a space or tab before the CR is still trailing whitespace, a blank CRLF
line at the end of a file is still a new blank line at EOF, and LF, CRLF and mixed files, with or
without a final newline, are judged alike; line endings are kept exactly as the change writes them
(``core.autocrlf=false``, so nothing is converted either way).

*What remains* (residual risk): attributes (``.gitattributes`` of the base or of the change itself)
still shape text conversion and diff output — e.g. ``-diff`` shows a text file as binary in the
evidence, ``-whitespace`` exempts a path from ``diff --check`` — though they cannot run code without a
filter or diff driver, which are neutralised; ``core.fileMode`` and ``core.ignoreCase`` are left as the
repository set them (git probed its file system); a git release adding a new code-running setting would
need a pin here; ``safe.directory`` ownership checks stay on (a repository owned by another user is
refused by git). Callers assume nothing else writes to a worktree or the source repository's ``.git``
while they run; keeping an executor away from the shared ``.git`` directory is the sandbox's job.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Final

from contracts.errors import Refused, ServiceUnavailable

GIT_TIMEOUT_SECONDS: Final = 60.0
"""The default wall-clock bound of one git call."""

MAX_GIT_OUTPUT_BYTES: Final = 256 * 1024 * 1024
"""The default bound of one call's stdout: far above any legitimate read (diffs of at most 40 files,
blobs checked for size first), low enough that a hostile repository cannot exhaust the process."""

MAX_GIT_ERROR_BYTES: Final = 64 * 1024
"""How much of stderr is kept (the rest is read and dropped): only its first lines are ever shown."""

GIT_INHERITED_VARIABLES: Final = ("PATH", "HOME", "TMPDIR")
"""The only variables of the caller's environment git gets: anything else (keys, tokens) could reach
a program git starts."""

_READ_CHUNK: Final = 64 * 1024

# Git's default whitespace rules, spelled out so a repository setting cannot relax `diff --check`,
# plus cr-at-eol: the CR of a CRLF line ending is not trailing whitespace (module docstring).
WHITESPACE_RULES: Final = "blank-at-eol,blank-at-eof,space-before-tab,cr-at-eol"

PINNED_CONFIG: Final[tuple[tuple[str, str], ...]] = (
    # Nothing the repository configures may run: hooks, fsmonitor, transports, external diff, gc.
    ("core.hooksPath", os.devnull),
    ("core.fsmonitor", "false"),
    ("core.untrackedCache", "false"),
    ("protocol.allow", "never"),
    ("diff.external", ""),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    # Signature checks run an external program (gpg.program & co.): never show or verify one.
    ("log.showSignature", "false"),
    ("gpg.program", os.devnull),
    ("gpg.openpgp.program", os.devnull),
    ("gpg.x509.program", os.devnull),
    ("gpg.ssh.program", os.devnull),
    ("core.pager", "cat"),
    ("core.editor", "false"),
    ("sequence.editor", "false"),
    ("submodule.recurse", "false"),
    ("core.attributesFile", os.devnull),
    ("core.excludesFile", os.devnull),
    # Content and paths exactly as stored: no line-ending conversion, real symlinks, full checkout.
    ("core.autocrlf", "false"),
    ("core.safecrlf", "false"),
    ("core.eol", "lf"),
    ("core.symlinks", "true"),
    ("core.protectNTFS", "true"),
    ("core.protectHFS", "true"),
    ("core.sparseCheckout", "false"),
    ("core.sparseCheckoutCone", "false"),
    ("index.sparse", "false"),
    ("core.logAllRefUpdates", "true"),
    ("core.quotePath", "true"),
    ("core.whitespace", WHITESPACE_RULES),
    # Diff output in one stable shape whatever the repository prefers.
    ("diff.noprefix", "false"),
    ("diff.mnemonicPrefix", "false"),
    ("diff.relative", "false"),
    ("diff.renames", "false"),
    ("diff.algorithm", "myers"),
    ("diff.indentHeuristic", "true"),
    ("diff.suppressBlankEmpty", "false"),
    ("diff.context", "3"),
    ("diff.interHunkContext", "0"),
    ("diff.ignoreSubmodules", "none"),
    ("diff.submodule", "short"),
    ("color.ui", "never"),
    ("color.diff", "never"),
    # `git apply` exactly as asked: no whitespace fixing or leniency (`diff --check` judges later).
    ("apply.whitespace", "nowarn"),
    ("apply.ignoreWhitespace", "no"),
)


class GitNotFound(ServiceUnavailable):
    """git is not installed or not on ``PATH`` (code ``git_unavailable``)."""

    def __init__(self, message: str = "git is not installed or not on PATH") -> None:
        super().__init__("git_unavailable", message)


class GitTimedOut(ServiceUnavailable):
    """A git call did not finish within its timeout and was killed (code ``git_unavailable``)."""

    def __init__(self, message: str) -> None:
        super().__init__("git_unavailable", message)


class GitOutputTooLarge(Refused):
    """A git call wrote more than its output bound and was killed (code ``git_output_too_large``)."""

    def __init__(self, message: str) -> None:
        super().__init__("git_output_too_large", message)


def git_environment() -> dict[str, str]:
    """The environment every git call gets: ``PATH``, ``HOME`` and ``TMPDIR`` from the caller's
    environment and nothing else of it — no ``GIT_*``, no secret — plus the pins described in the
    module docstring."""
    environment = {name: os.environ[name] for name in GIT_INHERITED_VARIABLES if name in os.environ}
    environment.update(
        {
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_ATTR_NOSYSTEM": "1",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_OPTIONAL_LOCKS": "0",
            "GIT_NO_REPLACE_OBJECTS": "1",
            "GIT_NO_LAZY_FETCH": "1",
            "GIT_PROTOCOL_FROM_USER": "0",
            "LC_ALL": "C",
        }
    )
    return environment


def git_argv(cwd: Path, args: tuple[str, ...], config: tuple[tuple[str, str], ...] = ()) -> list[str]:
    """The argument vector of ``git args`` in ``cwd``: the global options and every pin of
    :data:`PINNED_CONFIG`, then ``config`` (later settings win), then ``args``."""
    pins: list[str] = []
    for key, value in (*PINNED_CONFIG, *config):
        pins += ["-c", f"{key}={value}"]
    return ["git", "--no-pager", "--no-replace-objects", "--literal-pathspecs", "-C", str(cwd), *pins, *args]


@dataclass(frozen=True)
class GitResult:
    """What one git call did: its exit status and what it wrote (stderr at most
    :data:`MAX_GIT_ERROR_BYTES`)."""

    returncode: int
    stdout: bytes
    stderr: bytes


def run_git(
    cwd: Path,
    *args: str,
    stdin: bytes | None = None,
    config: tuple[tuple[str, str], ...] = (),
    timeout: float = GIT_TIMEOUT_SECONDS,
    max_output: int = MAX_GIT_OUTPUT_BYTES,
) -> GitResult:
    """Run ``git args`` in ``cwd`` as the module docstring describes and return what it did.

    ``stdin`` is written to git's standard input (closed when ``None``); ``config`` adds ``-c``
    settings after the pins; ``timeout`` bounds the whole call in seconds; ``max_output`` bounds
    stdout in bytes. A non-zero exit is returned, not raised. Raises :class:`GitNotFound` and
    :class:`GitTimedOut` (both :class:`ServiceUnavailable` ``git_unavailable``) and
    :class:`GitOutputTooLarge` (:class:`Refused`); git is killed in the last two cases.
    """
    argv = git_argv(cwd, args, config)
    try:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=git_environment(),
            shell=False,
            close_fds=True,
        )
    except FileNotFoundError as exc:
        raise GitNotFound() from exc
    assert process.stdout is not None and process.stderr is not None
    deadline = time.monotonic() + timeout
    out = _Reader(process.stdout, max_output, process.kill)
    err = _Reader(process.stderr, MAX_GIT_ERROR_BYTES, None)
    threads: list[threading.Thread] = [out, err]
    if stdin is not None:
        assert process.stdin is not None
        threads.append(_Writer(process.stdin, stdin))
    try:
        for thread in threads:
            thread.start()
        try:
            process.wait(timeout=max(deadline - time.monotonic(), 0))
        except subprocess.TimeoutExpired:
            raise _timed_out(args, timeout, cwd) from None
        for thread in threads:
            # A program git started may still hold a pipe open: it too gets only what is left.
            thread.join(max(deadline - time.monotonic(), 0))
            if thread.is_alive():
                raise _timed_out(args, timeout, cwd)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
    if out.over:
        raise GitOutputTooLarge(
            f"git {_verb(args)} wrote more than {max_output} bytes in {cwd}: it was stopped (output is "
            "never cut)"
        )
    return GitResult(returncode=process.returncode, stdout=bytes(out.data), stderr=bytes(err.data))


def _verb(args: tuple[str, ...]) -> str:
    return args[0] if args else "(no command)"


def _timed_out(args: tuple[str, ...], timeout: float, cwd: Path) -> GitTimedOut:
    return GitTimedOut(f"git {_verb(args)} did not finish within {timeout:g} s in {cwd}")


class _Reader(threading.Thread):
    """Reads a pipe to its end, keeping at most ``limit`` bytes. With ``on_over``, one byte more sets
    ``over``, calls it (to stop the writer) and stops reading; without, the rest is dropped."""

    def __init__(self, stream: IO[bytes], limit: int, on_over: Callable[[], None] | None) -> None:
        super().__init__(daemon=True)
        self._stream = stream
        self._limit = limit
        self._on_over = on_over
        self.data = bytearray()
        self.over = False

    def run(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            while chunk := self._stream.read1(_READ_CHUNK):  # type: ignore[attr-defined]
                room = self._limit - len(self.data)
                if len(chunk) <= room:
                    self.data += chunk
                    continue
                self.data += chunk[: max(room, 0)]
                if self._on_over is not None:
                    self.over = True
                    with contextlib.suppress(OSError):
                        self._on_over()
                    return


class _Writer(threading.Thread):
    """Writes ``data`` to git's stdin and closes it (git may stop reading early: that is its call)."""

    def __init__(self, stream: IO[bytes], data: bytes) -> None:
        super().__init__(daemon=True)
        self._stream = stream
        self._data = data

    def run(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._stream.write(self._data)
        with contextlib.suppress(OSError, ValueError):
            self._stream.close()


def first_line(output: bytes) -> str:
    """The first non-blank line of git's output (at most 500 characters), or ``git gave no reason``."""
    for line in output.decode("utf-8", "backslashreplace").splitlines():
        if line.strip():
            return line.strip()[:500]
    return "git gave no reason"


def error_line(output: bytes) -> str:
    """git's first ``error:``/``fatal:`` line (else its first line)."""
    for line in output.decode("utf-8", "backslashreplace").splitlines():
        if line.startswith(("error:", "fatal:")):
            return line.strip()[:500]
    return first_line(output)


def split_z(output: bytes) -> list[bytes]:
    """The non-empty items of NUL-separated (``-z``) output."""
    return [item for item in output.split(b"\0") if item]


@dataclass(frozen=True)
class Git:
    """git in one directory, with the pinned configuration plus ``extra_config`` (e.g. filter pins)."""

    cwd: Path
    extra_config: tuple[tuple[str, str], ...] = ()
    timeout: float = GIT_TIMEOUT_SECONDS

    def run(self, *args: str, stdin: bytes | None = None) -> GitResult:
        """:func:`run_git` in :attr:`cwd`; a non-zero exit is returned."""
        return run_git(self.cwd, *args, stdin=stdin, config=self.extra_config, timeout=self.timeout)

    def ok(self, *args: str, stdin: bytes | None = None) -> bytes:
        """stdout of a call that must succeed; :class:`ServiceUnavailable` ``git_failed`` otherwise."""
        result = self.run(*args, stdin=stdin)
        if result.returncode != 0:
            raise ServiceUnavailable(
                "git_failed", f"git {_verb(args)} failed in {self.cwd}: {first_line(result.stderr)}"
            )
        return result.stdout

    def text(self, *args: str) -> str:
        """stdout of a call that must succeed, decoded and stripped."""
        return self.ok(*args).decode("utf-8", "backslashreplace").strip()
