"""The sandbox the ``command`` executor's agent and a pr_ready run's verify commands run in: bubblewrap
(``bwrap``), built from an allow-list (docs/architecture.md "Worktree execution").

Plain functions (no Temporal). :func:`confinement` finds bubblewrap and checks, once per worker
process and program (:func:`probe_confinement`), that it can set up the sandbox here;
:func:`sandbox_layout` works out an attempt's paths; :func:`sandbox_arguments` is bubblewrap's option
list for one command.

**What the sandbox is.** bubblewrap's root is an empty tmpfs, remounted read-only once everything is
in place, so nothing exists in it that is not bound on purpose:

* read-only system directories: ``/usr`` and ``/bin``, ``/sbin``, ``/lib``, ``/lib32``, ``/lib64``,
  ``/libx32`` (recreated as the symlinks they are on a merged-``/usr`` system), and of ``/etc`` only
  the entries in :data:`ETC_ENTRIES` (users and groups, name resolution, the dynamic linker's cache,
  alternatives, certificates, time zone, the system git configuration) — no ``/etc/shadow``, no
  ``/etc/ssh``, no package manager credentials; a fresh ``/dev`` (null, zero, random, tty, shm) and a
  ``/proc`` of the sandbox's own process namespace, so ``/proc/1/environ`` is bubblewrap's reduced
  environment, not the worker's; no ``/sys``, ``/run``, ``/var``, ``/tmp``, ``/home``, ``/root``,
  ``/opt`` or ``/srv``;
* read-only: the source repository's git directory (``git rev-parse --git-common-dir`` of the
  worktree: objects, refs, packed refs, HEAD, logs, hooks), with its ``config`` replaced by a
  sanitised copy (:data:`SANITISED_CONFIG_KEYS` only — no remote URLs, which may carry credentials,
  no includes, no hooks path) and its ``worktrees/`` directory replaced by an empty tmpfs, so no other
  attempt's git metadata is visible. The source repository's working tree is not visible at all;
* writable: the attempt's worktree; the worktree's own git directory
  (``<git-common-dir>/worktrees/<name>``: HEAD, index, reflog — the worker checks each afterwards)
  except its ``commondir``, ``gitdir`` and ``locked`` files, which stay read-only so the worker's
  identity check and housekeeping keep their meaning; and the attempt's private HOME and TMPDIR.
  Nothing else can be written: the root, ``/usr`` and every other bind are read-only. An agent's
  ``git commit`` fails for lack of write access to the objects: contained;
* hidden: the state directory (the database, other runs' worktrees and evidence), every registered
  repository and the worker's home are not bound; where one of them lies inside a bound system
  directory it is covered by an empty tmpfs (:func:`sandbox_layout`'s ``hidden``).

Namespaces and limits: its own process, IPC, host-name and (where the kernel allows) cgroup
namespaces; a network namespace of its own — only its own loopback — unless the captured
configuration grants the agent the network (verify commands never get it); every capability dropped
(``--cap-drop ALL``: a root worker's agent cannot remount or unmount anything); ``--new-session`` (no
terminal to inject input into); ``--die-with-parent``; ``--clearenv`` plus an explicit ``--setenv``
for each variable. The option list reaches bubblewrap through a memory file (``--args FD``), never its
command line, so a credential in the environment is not in ``/proc/<pid>/cmdline`` for the host's
other processes to read. bubblewrap leads the command's process group on the host: killing that group
kills bubblewrap and the sandbox's init, and with them, by the kernel's pid-namespace rule, every
process inside. ``--json-status-fd`` tells a sandbox that could not be set up (no child was started)
from a command that failed.

*What remains* (residual risk): the kernel is shared (no seccomp filter, no resource limits beyond
the wall-clock budget: the sandbox's ``/dev/shm`` and the root tmpfs's mount points live in memory,
and the worktree, HOME and TMPDIR are on the worker's disk); read-only system directories and the
allow-listed ``/etc`` entries are visible as they are; the source repository's objects, refs and
reflogs are readable (they are what the worktree is made of); an agent granted the network shares the
worker's network namespace, its loopback services (Temporal, the database) included.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Final

from activities.worktree_lifecycle import open_attempt
from contracts.worktree import WorktreeAttempt
from runtime.git import Git

SAFE_PATH: Final = "/usr/local/bin:/usr/bin:/bin"
"""Where bubblewrap is looked for, and the ``PATH`` of every confined command."""

SYSTEM_DIRECTORIES: Final = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
"""Bound read-only when they exist (a symlink, as on merged-``/usr`` systems, is recreated as one)."""

ETC_ENTRIES: Final = (
    "passwd",
    "group",
    "nsswitch.conf",
    "hosts",
    "host.conf",
    "resolv.conf",
    "gai.conf",
    "services",
    "protocols",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "alternatives",
    "ssl",
    "ca-certificates",
    "ca-certificates.conf",
    "pki",
    "crypto-policies",
    "localtime",
    "timezone",
    "locale.alias",
    "locale.conf",
    "mime.types",
    "os-release",
    "debian_version",
    "gitconfig",
)
"""The entries of ``/etc`` a confined command sees (read-only, those that exist); ``python3*``
directories (Debian's ``sitecustomize``) too. Nothing else of ``/etc``."""

SANITISED_CONFIG_KEYS: Final = (
    r"^(core\.(repositoryformatversion|bare|filemode|symlinks|ignorecase|precomposeunicode)"
    r"|extensions\..*)$"
)
"""The settings of the source repository's configuration a confined command's git sees: what git
needs to read the repository (its format, object format and other extensions) and how the file system
behaves. Remotes (their URLs may carry credentials), includes, hooks and aliases are left out."""

SANITISED_CONFIG_FILE: Final = "sandbox-git-config"
"""The sanitised configuration, in the attempt's evidence directory (outside the sandbox)."""

SANDBOX_HOSTNAME: Final = "specialists-sandbox"
_PROBE_TIMEOUT_SECONDS: Final = 10
_IDENTITY_FILES: Final = ("commondir", "gitdir", "locked")


@dataclasses.dataclass(frozen=True)
class Confinement:
    """Whether bubblewrap can confine commands on this worker: ``program`` (``None``: not found),
    its ``version`` and, when it cannot, ``reason``."""

    available: bool
    program: str | None
    version: str = ""
    reason: str = ""


def find_bubblewrap() -> str | None:
    """``bwrap`` on :data:`SAFE_PATH`, or ``None``."""
    return shutil.which("bwrap", path=SAFE_PATH)


def confinement(program: str | None = None) -> Confinement:
    """Whether commands can be confined on this worker: by ``program`` (default: :func:`find_bubblewrap`,
    looked up on every call), probed once per process and program (:func:`probe_confinement`)."""
    program = program if program is not None else find_bubblewrap()
    if program is None:
        return Confinement(False, None, reason=f"bubblewrap (bwrap) is not installed on {SAFE_PATH}")
    return probe_confinement(program)


@functools.cache
def probe_confinement(program: str) -> Confinement:
    """Whether ``program`` can set up the sandbox here — its namespaces, an allow-listed root, its own
    ``/proc`` and ``/dev``, no network, no capabilities — by running ``true`` in one. Probed once per
    process and program."""
    if not os.access(program, os.X_OK) or not Path(program).is_file():
        return Confinement(False, program, reason=f"{program} is not an executable file")
    true = shutil.which("true", path=SAFE_PATH)
    try:
        version = subprocess.run(
            [program, "--version"], capture_output=True, env=launcher_environment(), timeout=10, check=False
        )
        options = [*_namespace_options(network=False), *system_options(), "--remount-ro", "/", "--clearenv"]
        probe = subprocess.run(
            [program, *options, "--", true or "/bin/true"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            env=launcher_environment(),
            timeout=_PROBE_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return Confinement(False, program, reason=f"{program} could not be run: {error}")
    described = version.stdout.decode("utf-8", "replace").strip() or "bubblewrap"
    if probe.returncode != 0:
        message = probe.stderr.decode("utf-8", "replace").strip().splitlines()
        return Confinement(
            False,
            program,
            described,
            reason=f"{described} cannot set up a sandbox here: {message[0] if message else probe.returncode}",
        )
    return Confinement(True, program, described)


def launcher_environment() -> dict[str, str]:
    """The environment bubblewrap itself runs with — and so the sandbox's init (``/proc/1/environ``
    inside): ``PATH`` and ``LANG``, nothing of the worker's."""
    return {"PATH": SAFE_PATH, "LANG": "C.UTF-8"}


def _namespace_options(*, network: bool) -> list[str]:
    options = [
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--hostname",
        SANDBOX_HOSTNAME,
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
    ]
    return options if network else [*options, "--unshare-net"]


def system_options() -> list[str]:
    """The read-only system part of the sandbox: :data:`SYSTEM_DIRECTORIES`, the allow-listed ``/etc``
    entries, a fresh ``/dev`` and the sandbox's own ``/proc``."""
    options: list[str] = []
    for directory in SYSTEM_DIRECTORIES:
        path = Path(directory)
        if path.is_symlink():
            options += ["--symlink", os.readlink(path), directory]
        elif path.is_dir():
            options += ["--ro-bind", directory, directory]
    etc = Path("/etc")
    names = list(ETC_ENTRIES)
    if etc.is_dir():
        names += sorted(entry.name for entry in etc.iterdir() if entry.name.startswith("python3"))
    for name in names:
        path = etc / name
        if path.exists():  # a symlink is bound as what it points to
            options += ["--ro-bind", str(path), str(path)]
    return [*options, "--dev", "/dev", "--proc", "/proc"]


def _system_roots() -> list[Path]:
    """The host paths the system part binds (a hidden path inside one must be covered)."""
    roots = [Path(d) for d in SYSTEM_DIRECTORIES if Path(d).is_dir() and not Path(d).is_symlink()]
    return [*roots, *(Path("/etc") / name for name in ETC_ENTRIES)]


@dataclasses.dataclass(frozen=True)
class SandboxLayout:
    """An attempt's paths in the sandbox: the writable ``worktree``, its own git directory
    ``git_dir`` (``<common_dir>/worktrees/<name>``), the read-only ``common_dir`` with ``git_config``
    (the sanitised copy bound over its ``config``), the writable ``home`` and ``tmpdir``, and the
    ``hidden`` paths (state directory, registered repositories, the worker's home)."""

    worktree: Path
    git_dir: Path
    common_dir: Path
    git_config: Path
    home: Path
    tmpdir: Path
    hidden: tuple[Path, ...] = ()


def sandbox_layout(
    attempt: WorktreeAttempt, home: Path, tmpdir: Path, hidden: Iterable[Path] = ()
) -> SandboxLayout:
    """The layout of ``attempt``'s sandbox, with the sanitised git configuration written to its
    evidence directory. Raises ``contracts.errors.ServiceUnavailable`` when git fails, and what
    :func:`activities.worktree_lifecycle.open_attempt` raises."""
    tree = open_attempt(attempt)
    git_dir, common_dir = (
        Path(line).resolve()
        for line in tree.text("rev-parse", "--path-format=absolute", "--git-dir", "--git-common-dir").split(
            "\n"
        )
    )
    git_config = attempt.evidence_dir / SANITISED_CONFIG_FILE
    _write_sanitised_config(common_dir / "config", git_config)
    return SandboxLayout(
        worktree=attempt.worktree.resolve(),
        git_dir=git_dir,
        common_dir=common_dir,
        git_config=git_config,
        home=home.resolve(),
        tmpdir=tmpdir.resolve(),
        hidden=tuple(dict.fromkeys(path.resolve() for path in hidden)),
    )


def _write_sanitised_config(source: Path, target: Path) -> None:
    """``target``: the settings of ``source`` that match :data:`SANITISED_CONFIG_KEYS`, nothing else."""
    target.write_bytes(b"")
    git = Git(target.parent)
    listed = git.run("config", "--file", str(source), "--null", "--get-regexp", SANITISED_CONFIG_KEYS)
    if listed.returncode not in (0, 1):  # 1: no key matched
        git.ok("config", "--file", str(source), "--list")  # raises git_failed with git's message
    for item in listed.stdout.split(b"\0"):
        if not item:
            continue
        key, _, value = item.decode("utf-8", "surrogateescape").partition("\n")
        git.ok("config", "--file", str(target), "--add", key, value or "true")


def sandbox_arguments(
    layout: SandboxLayout, environment: Mapping[str, str], *, network: bool, chdir: Path | None = None
) -> list[str]:
    """bubblewrap's options (before ``--``) for one command in ``layout``: the system part, the
    source repository's git data, the writable attempt paths, its ``environment`` exactly, cwd the
    worktree (or ``chdir``, a directory the caller checked lies inside it), and ``network`` or not.
    Pass them through ``--args`` (they hold the environment)."""
    options = [*_namespace_options(network=network), *system_options()]
    roots = _system_roots()
    for path in layout.hidden:
        if path.is_dir() and any(path.is_relative_to(root) for root in roots):
            options += ["--tmpfs", str(path)]
    common, own = layout.common_dir, layout.git_dir
    options += ["--ro-bind", str(common), str(common)]
    if (common / "config").is_file():
        options += ["--ro-bind", str(layout.git_config), str(common / "config")]
    if own.is_relative_to(common / "worktrees"):
        options += ["--tmpfs", str(common / "worktrees")]
    options += ["--bind", str(own), str(own)]
    for name in _IDENTITY_FILES:
        if (own / name).is_file():
            options += ["--ro-bind", str(own / name), str(own / name)]
    for path in (layout.worktree, layout.home, layout.tmpdir):
        options += ["--bind", str(path), str(path)]
    options += ["--remount-ro", "/", "--chdir", str(chdir or layout.worktree), "--clearenv"]
    for name, value in environment.items():
        options += ["--setenv", name, value]
    return options


def describe(confinement: Confinement, *, network: bool) -> str:
    """How a command ran confined, in one line (the report's ``confinement``)."""
    return (
        f"{confinement.version or 'bubblewrap'}: writable only the worktree, its own git metadata "
        "(HEAD, index, reflog), HOME and TMPDIR; the source repository's git data read-only; the "
        "state directory, other repositories and the worker's home not visible; own /proc and process "
        "namespace, no capabilities; "
        + ("the worker's network (network = true was approved)" if network else "no network")
    )


def child_started(status: bytes) -> bool:
    """Whether bubblewrap's ``--json-status-fd`` output reports a started child (the sandbox was
    set up)."""
    for line in status.splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if isinstance(item, dict) and "child-pid" in item:
            return True
    return False
