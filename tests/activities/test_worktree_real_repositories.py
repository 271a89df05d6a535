"""Worktree execution on what real repositories hold, each case on a repository the test builds: Windows
(CRLF), Unix (LF) and mixed line endings and files without a final newline, binary files, renames and
mode changes — through both executors where the patch format allows (a change job's patch, and an
agent's direct edits, simulated by writing files in the worktree before ``check_and_collect``) — and
results that are the same whatever the user's global git configuration says."""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from activities.change_evidence import check_and_collect, write_pr_ready_patch
from activities.patch_checks import apply_patch
from activities.worktree_lifecycle import create_attempt_worktree
from contracts.worktree import (
    ChangedFile,
    ChangeEvidence,
    ExecutionFailure,
    FileStatus,
    NumstatEntry,
    WorktreeAttempt,
    WorktreeExecutionFailed,
)
from tests.store.git_repository import git, make_working_tree

RUN = "SOR-REALREPOSITORIES1"

# Base contents, byte for byte.
CRLF = b"first\r\nsecond\r\nthird\r\n"
LF = b"first\nsecond\nthird\n"
MIXED = b"first\nsecond\r\nthird\n"
NO_FINAL_NEWLINE = b"first\nsecond\nthird"
CRLF_NO_FINAL_NEWLINE = b"first\r\nsecond\r\nthird"
IMAGE = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 8
RENAMED_TEXT = b"".join(b"line %d of a file that will move\n" % i for i in range(1, 21))


@pytest.fixture
def source(tmp_path: Path) -> Path:
    """A repository whose base commit holds files with every kind of line ending, a binary file, a
    file to rename, and a plain and an executable script."""
    tree = make_working_tree(tmp_path / "repo")
    files = {
        "crlf.txt": CRLF,
        "lf.txt": LF,
        "mixed.txt": MIXED,
        "no-final-newline.txt": NO_FINAL_NEWLINE,
        "crlf-no-final-newline.txt": CRLF_NO_FINAL_NEWLINE,
        "assets/logo.png": IMAGE,
        "src/moving.txt": RENAMED_TEXT,
        "tool.sh": b"#!/bin/sh\necho tool\n",
        "run.sh": b"#!/bin/sh\necho run\n",
    }
    for name, data in files.items():
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_bytes(data)
    (tree / "run.sh").chmod(0o755)
    git(tree, "add", ".")
    git(tree, "commit", "--quiet", "--no-gpg-sign", "-m", "real files")
    assert "100755 blob" in git(tree, "ls-tree", "HEAD", "run.sh")
    return tree


@pytest.fixture
def base(source: Path) -> str:
    return git(source, "rev-parse", "HEAD")


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "state"


@pytest.fixture
def attempt(source: Path, base: str, state: Path) -> WorktreeAttempt:
    return create_attempt_worktree(source, base, state, RUN)


@contextmanager
def fails_closed(failure_type: str, match: str = "") -> Iterator[None]:
    """The block must raise :class:`WorktreeExecutionFailed` with ``failure_type`` (and ``match`` in its
    message)."""
    with pytest.raises(WorktreeExecutionFailed) as caught:
        yield
    assert caught.value.code == failure_type, caught.value.message
    assert match in caught.value.message


def changed(evidence: ChangeEvidence) -> dict[str, ChangedFile]:
    return {f.path: f for f in evidence.files}


def counts(evidence: ChangeEvidence) -> dict[str, NumstatEntry]:
    return {n.path: n for n in evidence.numstat}


def fresh_clone_at(source: Path, base: str, target: Path) -> Path:
    """A clone of ``source`` checked out at ``base``, with plain git (the user's side of a pr-ready
    patch)."""
    git(source.parent, "clone", "--quiet", str(source), str(target))
    git(target, "checkout", "--quiet", "--detach", base)
    return target


# --------------------------------------------------------------------------------------------------
# Line endings: a change that keeps a file's line endings is not a whitespace error

# Each file's second line changed, its line endings kept exactly.
KEPT_ENDINGS = {
    "crlf.txt": b"first\r\nSECOND\r\nthird\r\n",
    "lf.txt": b"first\nSECOND\nthird\n",
    "mixed.txt": b"first\nSECOND\r\nthird\n",
    "no-final-newline.txt": b"first\nsecond\nTHIRD",
    "crlf-no-final-newline.txt": b"first\r\nsecond\r\nTHIRD",
    "new-crlf.txt": b"a new\r\nWindows file\r\n",
}


def test_a_direct_edit_that_keeps_each_files_line_endings_passes_and_its_evidence_keeps_the_crs(
    attempt: WorktreeAttempt,
) -> None:
    for name, data in KEPT_ENDINGS.items():
        (attempt.worktree / name).write_bytes(data)
    # git's bare default rules would call every CR before a line feed trailing whitespace.
    bare = subprocess.run(
        ["git", "-c", "core.whitespace=blank-at-eol", "diff", "--check", attempt.base_commit],
        cwd=attempt.worktree,
        capture_output=True,
        env={"PATH": os.environ["PATH"], "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull},
    )
    assert bare.returncode != 0 and b"crlf.txt:2: trailing whitespace." in bare.stdout

    evidence = check_and_collect(attempt)

    assert set(changed(evidence)) == set(KEPT_ENDINGS)
    assert changed(evidence)["new-crlf.txt"].status == FileStatus.ADDED
    assert {name: (n.added, n.deleted) for name, n in counts(evidence).items()} == {
        **{name: (1, 1) for name in KEPT_ENDINGS},
        "new-crlf.txt": (2, 0),
    }
    assert evidence.diff is not None
    assert "-second\r\n+SECOND\r\n" in evidence.diff  # crlf.txt, CRs kept in the evidence
    assert "-third\n\\ No newline at end of file\n+THIRD\n\\ No newline at end of file\n" in evidence.diff
    for name, data in KEPT_ENDINGS.items():
        assert (attempt.worktree / name).read_bytes() == data  # nothing was converted


def crlf_patch() -> str:
    """A change job's patch touching CRLF lines (as ``git diff`` writes them: each line's CR before its
    LF), a mixed file's CRLF line, a CRLF file without a final newline, and a new CRLF file."""
    return (
        "diff --git a/crlf.txt b/crlf.txt\n--- a/crlf.txt\n+++ b/crlf.txt\n"
        "@@ -1,3 +1,4 @@\n first\r\n-second\r\n+SECOND\r\n+inserted\r\n third\r\n"
        "diff --git a/mixed.txt b/mixed.txt\n--- a/mixed.txt\n+++ b/mixed.txt\n"
        "@@ -1,3 +1,3 @@\n first\n-second\r\n+SECOND\r\n third\n"
        "diff --git a/crlf-no-final-newline.txt b/crlf-no-final-newline.txt\n"
        "--- a/crlf-no-final-newline.txt\n+++ b/crlf-no-final-newline.txt\n"
        "@@ -1,3 +1,3 @@\n first\r\n second\r\n-third\n\\ No newline at end of file\n"
        "+THIRD\n\\ No newline at end of file\n"
        "diff --git a/new-crlf.txt b/new-crlf.txt\nnew file mode 100644\n--- /dev/null\n+++ b/new-crlf.txt\n"
        "@@ -0,0 +1,2 @@\n+a new\r\n+Windows file\r\n"
    )


def test_a_patch_touching_crlf_lines_applies_exactly_and_its_evidence_reproduces_it(
    attempt: WorktreeAttempt, source: Path, base: str, state: Path
) -> None:
    applied = apply_patch(attempt, crlf_patch())

    assert applied.paths == ["crlf-no-final-newline.txt", "crlf.txt", "mixed.txt", "new-crlf.txt"]
    assert (attempt.worktree / "crlf.txt").read_bytes() == b"first\r\nSECOND\r\ninserted\r\nthird\r\n"
    assert (attempt.worktree / "mixed.txt").read_bytes() == b"first\nSECOND\r\nthird\n"
    assert (attempt.worktree / "crlf-no-final-newline.txt").read_bytes() == b"first\r\nsecond\r\nTHIRD"
    assert (attempt.worktree / "new-crlf.txt").read_bytes() == b"a new\r\nWindows file\r\n"
    evidence = check_and_collect(attempt)
    assert {name: (n.added, n.deleted) for name, n in counts(evidence).items()} == {
        "crlf.txt": (2, 1),
        "mixed.txt": (1, 1),
        "crlf-no-final-newline.txt": (1, 1),
        "new-crlf.txt": (2, 0),
    }
    # git's diff of the change is itself a patch the patch executor takes, to the same bytes.
    assert evidence.diff is not None
    replay = create_attempt_worktree(source, base, state, RUN)
    apply_patch(replay, evidence.diff)
    assert check_and_collect(replay).diff_sha256 == evidence.diff_sha256
    assert (replay.worktree / "crlf.txt").read_bytes() == (attempt.worktree / "crlf.txt").read_bytes()


@pytest.mark.parametrize(
    ("name", "data", "finding"),
    [
        ("crlf.txt", b"first\r\nsecond \r\nthird\r\n", "crlf.txt:2: trailing whitespace."),
        ("crlf.txt", b"first\r\nsecond\t\r\nthird\r\n", "crlf.txt:2: trailing whitespace."),
        ("crlf.txt", b"first\r\n \tsecond\r\nthird\r\n", "crlf.txt:2: space before tab in indent."),
        ("crlf.txt", CRLF + b"\r\n", "crlf.txt:4: new blank line at EOF."),
        ("mixed.txt", b"first\nsecond\r\nthird  \n", "mixed.txt:3: trailing whitespace."),
        ("lf.txt", b"first\nsecond \nthird\n", "lf.txt:2: trailing whitespace."),
        ("crlf-no-final-newline.txt", b"first\r\nsecond\r\nthird ", "crlf-no-final-newline.txt:3: trailing"),
        ("new-crlf.txt", b"a new \r\nfile\r\n", "new-crlf.txt:1: trailing whitespace."),
    ],
    ids=[
        "space-before-cr",
        "tab-before-cr",
        "space-before-tab-crlf",
        "blank-crlf-line-at-eof",
        "mixed-file-lf-line",
        "lf-file",
        "no-final-newline",
        "new-crlf-file",
    ],
)
def test_a_change_that_introduces_real_whitespace_errors_still_fails_in_crlf_files_too(
    attempt: WorktreeAttempt, name: str, data: bytes, finding: str
) -> None:
    (attempt.worktree / name).write_bytes(data)
    with fails_closed(ExecutionFailure.DIFF_CHECK_FAILED, finding):
        check_and_collect(attempt)


def test_a_patch_that_leaves_a_space_before_a_cr_applies_but_fails_the_check(
    attempt: WorktreeAttempt,
) -> None:
    apply_patch(
        attempt,
        "diff --git a/crlf.txt b/crlf.txt\n--- a/crlf.txt\n+++ b/crlf.txt\n"
        "@@ -1,3 +1,3 @@\n first\r\n-second\r\n+SECOND \r\n third\r\n",
    )
    assert (attempt.worktree / "crlf.txt").read_bytes() == b"first\r\nSECOND \r\nthird\r\n"
    with fails_closed(ExecutionFailure.DIFF_CHECK_FAILED, "crlf.txt:2: trailing whitespace."):
        check_and_collect(attempt)


def test_a_patch_that_drops_the_crs_of_a_crlf_file_does_not_apply(attempt: WorktreeAttempt) -> None:
    # The context must match the file byte for byte: git apply never guesses line endings.
    with fails_closed(ExecutionFailure.PATCH_DOES_NOT_APPLY, "crlf.txt"):
        apply_patch(
            attempt,
            "diff --git a/crlf.txt b/crlf.txt\n--- a/crlf.txt\n+++ b/crlf.txt\n"
            "@@ -1,3 +1,3 @@\n first\n-second\n+SECOND\n third\n",
        )
    assert (attempt.worktree / "crlf.txt").read_bytes() == CRLF


# --------------------------------------------------------------------------------------------------
# Binary files

NEW_BINARY = b"\x00\x01\x02 payload-that-must-not-reach-the-evidence \xff\xfe" * 16


def test_an_agents_binary_change_is_named_binary_in_the_evidence_and_carried_by_the_pr_ready_patch(
    attempt: WorktreeAttempt, source: Path, base: str, tmp_path: Path
) -> None:
    changed_image = IMAGE[:20] + b"payload-that-must-not-reach-the-evidence" + IMAGE[60:]
    (attempt.worktree / "assets" / "logo.png").write_bytes(changed_image)
    (attempt.worktree / "assets" / "new.bin").write_bytes(NEW_BINARY)

    evidence = check_and_collect(attempt)

    files = changed(evidence)
    assert (files["assets/logo.png"].status, files["assets/logo.png"].new_mode) == (
        FileStatus.MODIFIED,
        "100644",
    )
    assert files["assets/new.bin"].status == FileStatus.ADDED
    assert {name: (n.added, n.deleted) for name, n in counts(evidence).items()} == {
        "assets/logo.png": (None, None),
        "assets/new.bin": (None, None),
    }
    assert evidence.diff is not None and evidence.diff_path is None
    assert "Binary files a/assets/logo.png and b/assets/logo.png differ\n" in evidence.diff
    assert "Binary files /dev/null and b/assets/new.bin differ\n" in evidence.diff
    assert "payload-that-must-not-reach-the-evidence" not in evidence.diff
    assert "GIT binary patch" not in evidence.diff

    patch_file, _, _ = write_pr_ready_patch(attempt)
    patch = patch_file.read_bytes()
    assert patch.count(b"GIT binary patch") == 2
    clone = fresh_clone_at(source, base, tmp_path / "clone")
    git(clone, "apply", str(patch_file))
    assert (clone / "assets" / "logo.png").read_bytes() == changed_image
    assert (clone / "assets" / "new.bin").read_bytes() == NEW_BINARY


def test_a_binary_patch_from_a_change_job_is_refused_even_when_git_could_apply_it(
    attempt: WorktreeAttempt, source: Path, base: str, state: Path
) -> None:
    # A well-formed git binary patch, made by git itself (an agent's change, as its pr-ready patch).
    (attempt.worktree / "assets" / "new.bin").write_bytes(NEW_BINARY)
    check_and_collect(attempt)
    patch_file, _, _ = write_pr_ready_patch(attempt)
    patch_text = patch_file.read_text("ascii")

    fresh = create_attempt_worktree(source, base, state, RUN)
    assert git(fresh.worktree, "apply", "--check", str(patch_file)) == ""  # git would take it
    with fails_closed(ExecutionFailure.PATCH_INVALID, "binary patch in 'diff --git a/assets/new.bin"):
        apply_patch(fresh, patch_text)
    assert not (fresh.worktree / "assets" / "new.bin").exists()
    assert check_and_collect(fresh).files == []


# --------------------------------------------------------------------------------------------------
# Renames and mode changes, through both executors

RENAME_WITH_CHANGE_PATCH = (
    "diff --git a/src/moving.txt b/lib/moved.txt\nsimilarity index 90%\n"
    "rename from src/moving.txt\nrename to lib/moved.txt\n--- a/src/moving.txt\n+++ b/lib/moved.txt\n"
    "@@ -1,4 +1,4 @@\n line 1 of a file that will move\n-line 2 of a file that will move\n"
    "+line 2 of a file that has moved\n line 3 of a file that will move\n line 4 of a file that will move\n"
)
MODE_PATCH = (
    "diff --git a/tool.sh b/tool.sh\nold mode 100644\nnew mode 100755\n"
    "diff --git a/run.sh b/run.sh\nold mode 100755\nnew mode 100644\n"
)


def _agent_renames_with_a_change(worktree: Path) -> None:
    (worktree / "lib").mkdir()
    os.rename(worktree / "src" / "moving.txt", worktree / "lib" / "moved.txt")
    moved = worktree / "lib" / "moved.txt"
    moved.write_bytes(
        moved.read_bytes().replace(b"line 2 of a file that will move", b"line 2 of a file that has moved")
    )


def _agent_flips_modes(worktree: Path) -> None:
    (worktree / "tool.sh").chmod(0o755)
    (worktree / "run.sh").chmod(0o644)


def test_a_rename_without_a_content_change_is_one_renamed_entry(attempt: WorktreeAttempt) -> None:
    os.rename(attempt.worktree / "src" / "moving.txt", attempt.worktree / "moved.txt")

    evidence = check_and_collect(attempt)

    assert evidence.files == [
        ChangedFile(
            path="moved.txt",
            status=FileStatus.RENAMED,
            old_path="src/moving.txt",
            old_mode="100644",
            new_mode="100644",
        )
    ]
    assert [(n.path, n.old_path, n.added, n.deleted) for n in evidence.numstat] == [
        ("moved.txt", "src/moving.txt", 0, 0)
    ]
    assert evidence.diff is not None
    assert "similarity index 100%\nrename from src/moving.txt\nrename to moved.txt\n" in evidence.diff


@pytest.mark.parametrize("executor", ["patch", "agent"])
def test_a_rename_with_a_content_change_shows_both_paths_and_the_changed_lines(
    attempt: WorktreeAttempt, executor: str
) -> None:
    if executor == "patch":
        apply_patch(attempt, RENAME_WITH_CHANGE_PATCH)
    else:
        _agent_renames_with_a_change(attempt.worktree)

    evidence = check_and_collect(attempt)

    assert [(f.path, f.status, f.old_path) for f in evidence.files] == [
        ("lib/moved.txt", FileStatus.RENAMED, "src/moving.txt")
    ]
    assert [(n.path, n.old_path, n.added, n.deleted) for n in evidence.numstat] == [
        ("lib/moved.txt", "src/moving.txt", 1, 1)
    ]
    assert evidence.files_changed == 2
    assert evidence.diff is not None
    assert "rename from src/moving.txt\nrename to lib/moved.txt\n" in evidence.diff
    assert "-line 2 of a file that will move\n+line 2 of a file that has moved\n" in evidence.diff


def test_both_executors_give_the_same_evidence_for_the_same_rename_and_mode_changes(
    source: Path, base: str, state: Path
) -> None:
    by_patch = create_attempt_worktree(source, base, state, RUN)
    apply_patch(by_patch, RENAME_WITH_CHANGE_PATCH + MODE_PATCH)
    by_agent = create_attempt_worktree(source, base, state, RUN)
    _agent_renames_with_a_change(by_agent.worktree)
    _agent_flips_modes(by_agent.worktree)

    from_patch, from_agent = check_and_collect(by_patch), check_and_collect(by_agent)

    assert from_patch.model_dump(exclude={"attempt"}) == from_agent.model_dump(exclude={"attempt"})


@pytest.mark.parametrize("executor", ["patch", "agent"])
def test_mode_changes_show_both_modes_in_the_evidence_and_reach_the_pr_ready_patch(
    attempt: WorktreeAttempt, source: Path, base: str, tmp_path: Path, executor: str
) -> None:
    if executor == "patch":
        apply_patch(attempt, MODE_PATCH)
    else:
        _agent_flips_modes(attempt.worktree)

    evidence = check_and_collect(attempt)

    assert {(f.path, f.status, f.old_mode, f.new_mode) for f in evidence.files} == {
        ("tool.sh", FileStatus.MODIFIED, "100644", "100755"),
        ("run.sh", FileStatus.MODIFIED, "100755", "100644"),
    }
    assert {(n.path, n.added, n.deleted) for n in evidence.numstat} == {("tool.sh", 0, 0), ("run.sh", 0, 0)}
    assert evidence.diff is not None
    assert "diff --git a/tool.sh b/tool.sh\nold mode 100644\nnew mode 100755\n" in evidence.diff
    assert "diff --git a/run.sh b/run.sh\nold mode 100755\nnew mode 100644\n" in evidence.diff
    patch_file, _, _ = write_pr_ready_patch(attempt)
    clone = fresh_clone_at(source, base, tmp_path / "clone")
    git(clone, "apply", str(patch_file))
    assert (clone / "tool.sh").stat().st_mode & stat.S_IXUSR
    assert not (clone / "run.sh").stat().st_mode & stat.S_IXUSR


def test_a_mode_change_shows_even_where_the_source_repository_says_core_filemode_false(
    source: Path, base: str, state: Path
) -> None:
    # A repository made on a file system without the executable bit: the worktree on the worker's disk
    # still has it, and a change to it is part of the change.
    git(source, "config", "core.fileMode", "false")
    attempt = create_attempt_worktree(source, base, state, RUN)
    assert (attempt.worktree / "run.sh").stat().st_mode & stat.S_IXUSR
    assert check_and_collect(attempt).files == []
    _agent_flips_modes(attempt.worktree)

    evidence = check_and_collect(attempt)

    assert {(f.path, f.old_mode, f.new_mode) for f in evidence.files} == {
        ("tool.sh", "100644", "100755"),
        ("run.sh", "100755", "100644"),
    }


def test_a_rename_that_also_changes_the_mode_shows_both(attempt: WorktreeAttempt) -> None:
    apply_patch(
        attempt,
        "diff --git a/tool.sh b/bin/tool\nold mode 100644\nnew mode 100755\nsimilarity index 100%\n"
        "rename from tool.sh\nrename to bin/tool\n",
    )
    assert (attempt.worktree / "bin" / "tool").stat().st_mode & stat.S_IXUSR

    evidence = check_and_collect(attempt)

    assert evidence.files == [
        ChangedFile(
            path="bin/tool",
            status=FileStatus.RENAMED,
            old_path="tool.sh",
            old_mode="100644",
            new_mode="100755",
        )
    ]


def test_a_file_replaced_by_a_symlink_inside_is_a_mode_change_to_120000(attempt: WorktreeAttempt) -> None:
    (attempt.worktree / "lf.txt").unlink()
    os.symlink("crlf.txt", attempt.worktree / "lf.txt")

    evidence = check_and_collect(attempt)

    assert [(f.path, f.status, f.old_mode, f.new_mode) for f in evidence.files] == [
        ("lf.txt", FileStatus.MODIFIED, "100644", "120000")
    ]


@pytest.mark.parametrize("target", ["/etc/passwd", "../outside.txt"], ids=["absolute", "climbs-out"])
def test_a_file_replaced_by_a_symlink_leading_out_still_fails_with_path_outside_worktree(
    attempt: WorktreeAttempt, target: str
) -> None:
    (attempt.worktree / "lf.txt").unlink()
    os.symlink(target, attempt.worktree / "lf.txt")
    with fails_closed(ExecutionFailure.PATH_OUTSIDE_WORKTREE, "lf.txt"):
        check_and_collect(attempt)


def test_a_mode_patch_to_a_symlink_mode_cannot_make_a_file_a_link_out(attempt: WorktreeAttempt) -> None:
    # git refuses a plain mode change between a file and a symlink: a type change is delete + create.
    with pytest.raises(WorktreeExecutionFailed) as caught:
        apply_patch(attempt, "diff --git a/lf.txt b/lf.txt\nold mode 100644\nnew mode 120000\n")
    assert caught.value.code in (ExecutionFailure.PATCH_INVALID, ExecutionFailure.PATCH_DOES_NOT_APPLY)
    assert not (attempt.worktree / "lf.txt").is_symlink()


# --------------------------------------------------------------------------------------------------
# The same result whatever the user's global git configuration


def _hostile_user_configuration(root: Path) -> dict[str, str]:
    """A HOME and an XDG_CONFIG_HOME whose git files would change every answer: line-ending
    conversion, relaxed whitespace rules, other prefixes, colour, an external diff (a trap), renames
    off, attributes that hide diffs and exempt whitespace, and excludes that hide new files."""
    home = root / "home"
    xdg = root / "xdg"
    for directory in (home / ".config" / "git", xdg / "git"):
        directory.mkdir(parents=True)
    trap = root / "external-diff"
    trap.write_text(f"#!/bin/sh\ntouch '{root / 'trap-ran'}'\n")
    trap.chmod(0o755)
    attributes = "* -diff -whitespace\n*.txt text eol=crlf\n*.sh binary\n"
    ignore = "*.txt\n*.bin\nlib/\n"
    for directory in (home / ".config" / "git", xdg / "git"):
        (directory / "attributes").write_text(attributes)
        (directory / "ignore").write_text(ignore)
    (root / "attributes-file").write_text(attributes)
    (root / "excludes-file").write_text(ignore)
    config = (
        "[core]\n\tautocrlf = true\n\teol = crlf\n\tsafecrlf = true\n"
        "\twhitespace = -trailing-space,-space-before-tab\n"
        f"\tattributesFile = {root / 'attributes-file'}\n\texcludesFile = {root / 'excludes-file'}\n"
        "\tfileMode = false\n\tquotePath = false\n\tabbrev = 7\n"
        f"[diff]\n\tnoprefix = true\n\tmnemonicPrefix = true\n\texternal = {trap}\n\trenames = copies\n"
        "\trelative = true\n\tcontext = 9\n\talgorithm = patience\n\torderFile = /dev/null\n"
        "[color]\n\tui = always\n\tdiff = always\n"
        "[apply]\n\twhitespace = fix\n\tignoreWhitespace = change\n"
        "[status]\n\tshowUntrackedFiles = no\n"
    )
    (home / ".gitconfig").write_text(config)
    (home / ".config" / "git" / "config").write_text(config)
    (xdg / "git" / "config").write_text(config)
    return {"HOME": str(home), "XDG_CONFIG_HOME": str(xdg)}


def _a_run_of_every_kind(source: Path, base: str, state: Path) -> tuple[list[object], Path]:
    """One attempt by patch, one by agent edits (line endings, binary, rename, modes, new files) and
    one that fails the whitespace check; what each gave (evidence, pr-ready patch bytes, failure)."""
    results: list[object] = []
    patched = create_attempt_worktree(source, base, state, RUN)
    apply_patch(patched, crlf_patch() + RENAME_WITH_CHANGE_PATCH + MODE_PATCH)
    results.append(check_and_collect(patched))
    results.append(write_pr_ready_patch(patched)[0].read_bytes())
    results.append({p.relative_to(patched.worktree): p.read_bytes() for p in patched.worktree.rglob("*.txt")})

    edited = create_attempt_worktree(source, base, state, RUN)
    for name, data in KEPT_ENDINGS.items():
        (edited.worktree / name).write_bytes(data)
    (edited.worktree / "assets" / "new.bin").write_bytes(NEW_BINARY)
    (edited.worktree / "assets" / "logo.png").write_bytes(IMAGE[::-1])
    _agent_renames_with_a_change(edited.worktree)
    _agent_flips_modes(edited.worktree)
    results.append(check_and_collect(edited))
    results.append(write_pr_ready_patch(edited)[0].read_bytes())

    failing = create_attempt_worktree(source, base, state, RUN)
    (failing.worktree / "crlf.txt").write_bytes(b"first\r\nsecond \r\nthird\r\n")
    with pytest.raises(WorktreeExecutionFailed) as caught:
        check_and_collect(failing)
    results.append((caught.value.code, caught.value.message))
    return results, failing.worktree


def test_evidence_and_checks_are_identical_under_a_hostile_global_git_configuration(
    source: Path, base: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clean, _ = _a_run_of_every_kind(source, base, tmp_path / "state-clean")

    hostile = _hostile_user_configuration(tmp_path / "user")
    for name, value in hostile.items():
        monkeypatch.setenv(name, value)
    under_hostile, failing_worktree = _a_run_of_every_kind(source, base, tmp_path / "state-hostile")

    assert under_hostile == clean
    assert not (tmp_path / "user" / "trap-ran").exists()
    # The configuration is live: plain git run as that user passes the change the check refuses.
    plain = subprocess.run(
        ["git", "diff", "--check", base],
        cwd=failing_worktree,
        capture_output=True,
        env={"PATH": os.environ["PATH"], **hostile},
    )
    assert plain.returncode == 0, plain.stdout
