"""Worktree execution core, on real git repositories: a fresh detached worktree per attempt at the frozen
base commit, patches applied only when they are plain git patches inside the worktree, and a check that
fails closed on commits, new refs, whitespace errors, too many files and escaping paths before it
collects the evidence (file list, numstat, diff) from git itself. The repository's own configuration
never gets to run a command."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from activities import worktree_lifecycle
from activities.change_evidence import check_and_collect
from activities.patch_checks import apply_patch
from activities.worktree_lifecycle import create_attempt_worktree
from contracts.errors import InvalidInput, Refused
from contracts.worktree import (
    MAX_CHANGED_FILES,
    MAX_INLINE_DIFF_BYTES,
    MAX_PATCH_BYTES,
    ChangeEvidence,
    ExecutionFailure,
    FileStatus,
    WorktreeAttempt,
    WorktreeExecutionFailed,
)
from runtime.git import git_environment
from tests.store.git_repository import git, make_working_tree

RUN = "SOR-0123456789ABCDEF"

GOOD_PATCH = """\
diff --git a/src/app.py b/src/app.py
--- a/src/app.py
+++ b/src/app.py
@@ -1,2 +1,3 @@
 def main():
-    return 1
+    value = 2
+    return value
diff --git a/src/new.py b/src/new.py
new file mode 100644
--- /dev/null
+++ b/src/new.py
@@ -0,0 +1 @@
+print("new")
diff --git a/old.txt b/old.txt
deleted file mode 100644
--- a/old.txt
+++ /dev/null
@@ -1 +0,0 @@
-old
diff --git a/docs/README.md b/docs/guide.md
similarity index 100%
rename from docs/README.md
rename to docs/guide.md
"""


def new_file_patch(path: str, text: str = "content\n", mode: str = "100644") -> str:
    """A ``diff --git`` section creating ``path`` with ``text``."""
    lines = text.split("\n")
    no_newline = lines[-1] != ""
    if not no_newline:
        lines.pop()
    body = "".join(f"+{line}\n" for line in lines) + ("\\ No newline at end of file\n" if no_newline else "")
    return (
        f"diff --git a/{path} b/{path}\nnew file mode {mode}\n--- /dev/null\n+++ b/{path}\n"
        f"@@ -0,0 +1,{len(lines)} @@\n{body}"
    )


@pytest.fixture
def source(tmp_path: Path) -> Path:
    """A repository whose ``main`` has ``docs/README.md``, ``src/app.py``, ``old.txt``, ``.gitignore``
    (``*.log``) and twenty files under ``many/``; HEAD of ``main`` is the base commit."""
    tree = make_working_tree(tmp_path / "repo")
    (tree / "src").mkdir()
    (tree / "src" / "app.py").write_text("def main():\n    return 1\n")
    (tree / "old.txt").write_text("old\n")
    (tree / ".gitignore").write_text("*.log\n")
    (tree / "many").mkdir()
    for index in range(20):
        (tree / "many" / f"f{index:02}.txt").write_text(f"file {index}\n")
    git(tree, "add", ".")
    git(tree, "commit", "--quiet", "--no-gpg-sign", "-m", "base")
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
def fails_closed(failure_type: str) -> Iterator[None]:
    """The block must raise :class:`WorktreeExecutionFailed` with ``failure_type``."""
    with pytest.raises(WorktreeExecutionFailed) as caught:
        yield
    assert caught.value.code == failure_type, caught.value.message


# --------------------------------------------------------------------------------------------------
# Creating attempts


def test_an_attempt_is_a_detached_worktree_at_the_base_commit_under_the_state_directory(
    attempt: WorktreeAttempt, source: Path, base: str, state: Path
) -> None:
    assert attempt.attempt == 1
    assert attempt.worktree == state.resolve() / "worktrees" / RUN / "attempt-1"
    assert attempt.evidence_dir == state.resolve() / "worktrees" / RUN / "attempt-1.evidence"
    assert git(attempt.worktree, "rev-parse", "HEAD") == base
    assert git(attempt.worktree, "status", "--porcelain", "--ignored") == ""
    with pytest.raises(Exception, match="returned non-zero"):
        git(attempt.worktree, "symbolic-ref", "HEAD")  # detached
    assert (attempt.worktree / "src" / "app.py").read_text() == "def main():\n    return 1\n"
    assert git(source, "for-each-ref", "--format=%(refname)").splitlines() == [
        "refs/heads/feature",
        "refs/heads/main",
    ]
    recorded = (attempt.evidence_dir / "source-refs.txt").read_bytes()
    assert hashlib.sha256(recorded).hexdigest() == attempt.source_refs_sha256
    assert attempt.source_refs_count == 2
    assert "locked" in git(source, "worktree", "list", "--porcelain")


def test_the_worktree_is_at_the_frozen_base_even_when_the_branch_moved_after_the_contract(
    source: Path, base: str, state: Path
) -> None:
    (source / "src" / "app.py").write_text("def main():\n    return 99\n")
    git(source, "commit", "--quiet", "--no-gpg-sign", "-am", "moved on")

    attempt = create_attempt_worktree(source, base, state, RUN)

    assert git(attempt.worktree, "rev-parse", "HEAD") == base
    assert (attempt.worktree / "src" / "app.py").read_text() == "def main():\n    return 1\n"
    evidence = check_and_collect(attempt)
    assert evidence.files == [] and evidence.files_changed == 0 and evidence.diff == ""


def test_a_retry_gets_attempt_2_and_leaves_attempt_1_as_it_was(
    attempt: WorktreeAttempt, source: Path, base: str, state: Path
) -> None:
    apply_patch(attempt, GOOD_PATCH)
    with fails_closed(ExecutionFailure.DIFF_CHECK_FAILED):
        (attempt.worktree / "src" / "app.py").write_text("broken \n")
        check_and_collect(attempt)

    retry = create_attempt_worktree(source, base, state, RUN)

    assert retry.attempt == 2
    assert retry.worktree.name == "attempt-2" and retry.evidence_dir.name == "attempt-2.evidence"
    assert (attempt.worktree / "src" / "app.py").read_text() == "broken \n"
    assert (attempt.worktree / "src" / "new.py").exists()
    assert (retry.worktree / "src" / "app.py").read_text() == "def main():\n    return 1\n"
    assert not (retry.worktree / "src" / "new.py").exists()


def test_attempt_numbers_skip_past_any_existing_attempt_directory_and_never_reuse_it(
    source: Path, base: str, state: Path
) -> None:
    stray = state / "worktrees" / RUN / "attempt-3"
    stray.mkdir(parents=True)
    (stray / "keep.txt").write_text("an earlier attempt\n")
    (state / "worktrees" / RUN / "attempt-4.evidence").mkdir()

    attempt = create_attempt_worktree(source, base, state, RUN)

    assert attempt.attempt == 5
    assert [p.name for p in stray.iterdir()] == ["keep.txt"]


def test_an_attempt_directory_that_already_exists_is_refused_never_reused(
    attempt: WorktreeAttempt, source: Path, base: str, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (attempt.worktree / "old.txt").write_text("attempt 1's work\n")
    monkeypatch.setattr(worktree_lifecycle, "_next_attempt_number", lambda run_dir: 1)  # a racing claim

    with pytest.raises(Refused) as caught:
        create_attempt_worktree(source, base, state, RUN)

    assert caught.value.code == "attempt_exists"
    assert (attempt.worktree / "old.txt").read_text() == "attempt 1's work\n"


def test_a_base_commit_missing_from_the_object_store_fails_with_base_commit_unavailable_and_creates_nothing(
    source: Path, state: Path
) -> None:
    with fails_closed(ExecutionFailure.BASE_COMMIT_UNAVAILABLE):
        create_attempt_worktree(source, "0123456789abcdef0123456789abcdef01234567", state, RUN)
    blob = git(source, "rev-parse", "HEAD:old.txt")
    with fails_closed(ExecutionFailure.BASE_COMMIT_UNAVAILABLE):
        create_attempt_worktree(source, blob, state, RUN)  # an object, but not a commit
    assert not (state / "worktrees").exists()


@pytest.mark.parametrize("run_id", ["../escape", "a/b", "", ".hidden"])
def test_a_run_id_that_could_name_another_directory_is_refused(
    source: Path, base: str, state: Path, run_id: str
) -> None:
    with pytest.raises(InvalidInput):
        create_attempt_worktree(source, base, state, run_id)


def test_a_directory_that_is_not_a_working_tree_top_level_is_refused(
    source: Path, base: str, state: Path
) -> None:
    with pytest.raises(InvalidInput, match="top level"):
        create_attempt_worktree(source / "src", base, state, RUN)


# --------------------------------------------------------------------------------------------------
# A good change and its evidence


def test_a_good_patch_yields_evidence_with_its_files_numstat_and_exact_diff(
    attempt: WorktreeAttempt, source: Path, base: str, state: Path
) -> None:
    applied = apply_patch(attempt, GOOD_PATCH)

    assert applied.paths == ["docs/README.md", "docs/guide.md", "old.txt", "src/app.py", "src/new.py"]
    assert applied.patch_sha256 == hashlib.sha256(GOOD_PATCH.encode()).hexdigest()
    assert applied.patch_path.read_text() == GOOD_PATCH
    assert applied.patch_path.parent == attempt.evidence_dir

    evidence = check_and_collect(attempt)

    files = {f.path: f for f in evidence.files}
    assert {path: f.status for path, f in files.items()} == {
        "docs/guide.md": FileStatus.RENAMED,
        "old.txt": FileStatus.DELETED,
        "src/app.py": FileStatus.MODIFIED,
        "src/new.py": FileStatus.ADDED,
    }
    assert files["docs/guide.md"].old_path == "docs/README.md"
    assert (files["src/new.py"].old_mode, files["src/new.py"].new_mode) == (None, "100644")
    assert {(n.path, n.old_path, n.added, n.deleted) for n in evidence.numstat} == {
        ("docs/guide.md", "docs/README.md", 0, 0),
        ("old.txt", None, 0, 1),
        ("src/app.py", None, 2, 1),
        ("src/new.py", None, 1, 0),
    }
    assert evidence.files_changed == 5  # a rename counts its old and its new path
    assert evidence.diff is not None and evidence.diff_path is None
    assert "+    value = 2\n" in evidence.diff and "rename from docs/README.md\n" in evidence.diff
    assert evidence.diff_sha256 == hashlib.sha256(evidence.diff.encode()).hexdigest()
    assert (evidence.run_id, evidence.attempt, evidence.base_commit) == (RUN, 1, base)
    # The evidence diff is the change itself: applied to the base in a fresh attempt, it reproduces it.
    replay = create_attempt_worktree(source, base, state, RUN)
    apply_patch(replay, evidence.diff)
    assert check_and_collect(replay).diff_sha256 == evidence.diff_sha256
    # The evidence round-trips through JSON (it crosses the Temporal boundary).
    assert ChangeEvidence.model_validate_json(evidence.model_dump_json()) == evidence


def test_files_an_executor_writes_directly_are_evidence_too_including_untracked_ignored_and_binary_ones(
    attempt: WorktreeAttempt,
) -> None:
    (attempt.worktree / "notes.log").write_text("ignored by .gitignore, still a change\n")
    (attempt.worktree / "image.bin").write_bytes(b"\x00\x01\x02binary")
    (attempt.worktree / "src" / "app.py").write_text("def main():\n    return 3\n")
    git(attempt.worktree, "update-index", "--assume-unchanged", "src/app.py")  # cannot hide it

    evidence = check_and_collect(attempt)

    assert {(f.path, f.status) for f in evidence.files} == {
        ("notes.log", FileStatus.ADDED),
        ("image.bin", FileStatus.ADDED),
        ("src/app.py", FileStatus.MODIFIED),
    }
    numstat = {n.path: (n.added, n.deleted) for n in evidence.numstat}
    assert numstat["image.bin"] == (None, None)
    assert evidence.diff is not None and "Binary files /dev/null and b/image.bin differ" in evidence.diff
    # Collecting again (an activity retry) gives the same evidence.
    assert check_and_collect(attempt) == evidence


def test_a_diff_over_the_inline_bound_is_stored_by_reference_with_a_matching_sha256(
    attempt: WorktreeAttempt,
) -> None:
    (attempt.worktree / "big.txt").write_text("".join(f"line {i}\n" for i in range(40_000)))

    evidence = check_and_collect(attempt)

    assert evidence.diff is None and evidence.diff_path is not None
    stored = evidence.diff_path.read_bytes()
    assert evidence.diff_bytes == len(stored) > MAX_INLINE_DIFF_BYTES
    assert hashlib.sha256(stored).hexdigest() == evidence.diff_sha256
    assert evidence.diff_path == attempt.evidence_dir / f"diff-{evidence.diff_sha256}.patch"
    assert stored.startswith(b"diff --git a/big.txt b/big.txt\n")


def test_a_diff_that_is_not_utf8_is_stored_by_reference_even_when_small(attempt: WorktreeAttempt) -> None:
    (attempt.worktree / "latin1.txt").write_bytes("caf\u00e9\n".encode("latin-1"))

    evidence = check_and_collect(attempt)

    assert evidence.diff is None and evidence.diff_path is not None
    assert evidence.diff_bytes < MAX_INLINE_DIFF_BYTES
    assert b"+caf\xe9\n" in evidence.diff_path.read_bytes()


# --------------------------------------------------------------------------------------------------
# Fail closed: commits, HEAD and refs


def test_a_commit_inside_the_worktree_fails_with_new_commit(attempt: WorktreeAttempt) -> None:
    apply_patch(attempt, new_file_patch("added.txt"))
    git(attempt.worktree, "add", "added.txt")
    git(attempt.worktree, "commit", "--quiet", "--no-gpg-sign", "-m", "model commit")

    with fails_closed(ExecutionFailure.NEW_COMMIT):
        check_and_collect(attempt)


def test_a_commit_inside_the_worktree_that_was_reset_away_is_still_seen(
    attempt: WorktreeAttempt, base: str
) -> None:
    (attempt.worktree / "added.txt").write_text("content\n")
    git(attempt.worktree, "add", "added.txt")
    git(attempt.worktree, "commit", "--quiet", "--no-gpg-sign", "-m", "model commit")
    git(attempt.worktree, "reset", "--quiet", "--soft", base)

    with fails_closed(ExecutionFailure.NEW_COMMIT):
        check_and_collect(attempt)


def test_a_worktree_head_checked_out_elsewhere_or_attached_to_a_branch_fails_with_head_moved(
    source: Path, base: str, state: Path
) -> None:
    elsewhere = create_attempt_worktree(source, base, state, RUN)
    git(elsewhere.worktree, "checkout", "--quiet", "--detach", f"{base}~1")
    with fails_closed(ExecutionFailure.HEAD_MOVED):
        check_and_collect(elsewhere)

    attached = create_attempt_worktree(source, base, state, RUN)
    git(attached.worktree, "switch", "--quiet", "-c", "model-branch")
    with fails_closed(ExecutionFailure.HEAD_MOVED):
        check_and_collect(attached)
    with fails_closed(ExecutionFailure.HEAD_MOVED):
        apply_patch(attached, new_file_patch("added.txt"))


def test_a_commit_in_the_source_repository_during_the_attempt_fails_with_new_commit(
    attempt: WorktreeAttempt, source: Path
) -> None:
    apply_patch(attempt, new_file_patch("added.txt"))
    (source / "old.txt").write_text("changed by someone else\n")
    git(source, "commit", "--quiet", "--no-gpg-sign", "-am", "unrelated work")

    with fails_closed(ExecutionFailure.NEW_COMMIT):
        check_and_collect(attempt)


@pytest.mark.parametrize(
    "new_ref", [("tag", "v1.0"), ("branch", "model-branch"), ("update-ref", "refs/notes/x")], ids=str
)
def test_a_new_ref_in_the_source_repository_fails_with_new_ref(
    attempt: WorktreeAttempt, source: Path, base: str, new_ref: tuple[str, str]
) -> None:
    command, name = new_ref
    git(source, command, name, base)

    with fails_closed(ExecutionFailure.NEW_REF):
        check_and_collect(attempt)


def test_the_source_repository_switching_branch_during_the_attempt_fails_with_head_moved(
    attempt: WorktreeAttempt, source: Path
) -> None:
    git(source, "switch", "--quiet", "feature")

    with fails_closed(ExecutionFailure.HEAD_MOVED):
        check_and_collect(attempt)


def test_a_changed_source_repository_with_an_altered_ref_record_still_fails_closed(
    attempt: WorktreeAttempt, source: Path, base: str
) -> None:
    git(source, "tag", "v2", base)
    (attempt.evidence_dir / "source-refs.txt").write_text("HEAD - -\n")

    with fails_closed(ExecutionFailure.NEW_REF):
        check_and_collect(attempt)


def test_a_worktree_whose_git_file_points_at_another_repository_fails_closed(
    attempt: WorktreeAttempt, tmp_path: Path
) -> None:
    other = make_working_tree(tmp_path / "other")
    (attempt.worktree / ".git").write_text(f"gitdir: {other / '.git'}\n")

    with fails_closed(ExecutionFailure.HEAD_MOVED):
        check_and_collect(attempt)


# --------------------------------------------------------------------------------------------------
# Fail closed: the change itself


def test_trailing_whitespace_fails_with_diff_check_failed_in_tracked_and_untracked_files(
    source: Path, base: str, state: Path
) -> None:
    tracked = create_attempt_worktree(source, base, state, RUN)
    apply_patch(
        tracked,
        "diff --git a/old.txt b/old.txt\n--- a/old.txt\n+++ b/old.txt\n@@ -1 +1 @@\n-old\n+new   \n",
    )
    with fails_closed(ExecutionFailure.DIFF_CHECK_FAILED):
        check_and_collect(tracked)

    untracked = create_attempt_worktree(source, base, state, RUN)
    apply_patch(untracked, new_file_patch("fresh.txt", "trailing \n"))
    with pytest.raises(WorktreeExecutionFailed, match=r"fresh\.txt:1: trailing whitespace"):
        check_and_collect(untracked)


def test_a_repository_setting_cannot_relax_the_whitespace_check(
    attempt: WorktreeAttempt, source: Path
) -> None:
    git(source, "config", "core.whitespace", "-blank-at-eol")
    (attempt.worktree / "old.txt").write_text("old \n")

    with fails_closed(ExecutionFailure.DIFF_CHECK_FAILED):
        check_and_collect(attempt)


def test_41_changed_paths_fail_with_too_many_files(attempt: WorktreeAttempt) -> None:
    patch = "".join(new_file_patch(f"new/f{index:02}.txt") for index in range(MAX_CHANGED_FILES + 1))
    apply_patch(attempt, patch)

    with fails_closed(ExecutionFailure.TOO_MANY_FILES):
        check_and_collect(attempt)


@pytest.mark.parametrize(("extra", "passes"), [(0, True), (1, False)])
def test_modified_deleted_untracked_and_ignored_paths_all_count_towards_the_limit_of_40(
    attempt: WorktreeAttempt, extra: int, passes: bool
) -> None:
    many = attempt.worktree / "many"
    for index in range(10):
        (many / f"f{index:02}.txt").write_text("modified\n")
    for index in range(10, 20):
        (many / f"f{index:02}.txt").unlink()
    for index in range(19 + extra):
        (attempt.worktree / f"untracked-{index:02}.txt").write_text("new\n")
    (attempt.worktree / "ignored.log").write_text("ignored, still counted\n")

    if passes:
        assert check_and_collect(attempt).files_changed == MAX_CHANGED_FILES
    else:
        with fails_closed(ExecutionFailure.TOO_MANY_FILES):
            check_and_collect(attempt)


@pytest.mark.parametrize("target", ["../../../../outside", "/etc"])
def test_a_symlink_created_by_the_patch_that_points_outside_fails_with_path_outside_worktree(
    attempt: WorktreeAttempt, target: str
) -> None:
    with fails_closed(ExecutionFailure.PATH_OUTSIDE_WORKTREE):
        apply_patch(attempt, new_file_patch("escape", target, mode="120000"))
    with fails_closed(ExecutionFailure.PATH_OUTSIDE_WORKTREE):
        check_and_collect(attempt)


def test_a_symlink_pointing_inside_the_worktree_is_an_ordinary_change(attempt: WorktreeAttempt) -> None:
    apply_patch(attempt, new_file_patch("shortcut", "src/app.py", mode="120000"))

    evidence = check_and_collect(attempt)

    assert [(f.path, f.new_mode) for f in evidence.files] == [("shortcut", "120000")]


def test_a_symlink_onto_the_worktrees_git_file_fails_with_path_outside_worktree(
    attempt: WorktreeAttempt,
) -> None:
    os.symlink(".git", attempt.worktree / "metadata")

    with fails_closed(ExecutionFailure.PATH_OUTSIDE_WORKTREE):
        check_and_collect(attempt)


def test_a_changed_path_that_follows_a_directory_symlink_outside_fails_with_path_outside_worktree(
    attempt: WorktreeAttempt, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "README.md").write_text("docs\n")
    (attempt.worktree / "docs" / "README.md").unlink()
    (attempt.worktree / "docs").rmdir()
    os.symlink(outside, attempt.worktree / "docs")

    with fails_closed(ExecutionFailure.PATH_OUTSIDE_WORKTREE):
        check_and_collect(attempt)


def test_a_nested_repository_in_the_worktree_fails_with_path_outside_worktree(
    attempt: WorktreeAttempt,
) -> None:
    git(attempt.worktree, "init", "--quiet", "vendored")
    (attempt.worktree / "vendored" / "hidden.txt").write_text("invisible to the outer diff\n")

    with fails_closed(ExecutionFailure.PATH_OUTSIDE_WORKTREE):
        check_and_collect(attempt)


# --------------------------------------------------------------------------------------------------
# Patches that are refused


@pytest.mark.parametrize(
    "patch",
    [
        new_file_patch("../escape.txt"),
        new_file_patch("src/../../escape.txt"),
        "diff --git a//etc/passwd b//etc/passwd\n--- a//etc/passwd\n+++ b//etc/passwd\n@@ -1 +1 @@\n-x\n+y\n",
        "diff --git a/old.txt b/old.txt\nsimilarity index 100%\nrename from old.txt\nrename to ../old.txt\n",
    ],
    ids=["dotdot", "nested-dotdot", "absolute", "rename-out"],
)
def test_a_patch_with_a_path_leading_outside_fails_with_path_outside_worktree(
    attempt: WorktreeAttempt, patch: str
) -> None:
    with fails_closed(ExecutionFailure.PATH_OUTSIDE_WORKTREE):
        apply_patch(attempt, patch)
    assert check_and_collect(attempt).files_changed == 0


@pytest.mark.parametrize(
    "path", [".git/config", ".git/hooks/post-checkout", "src/.GIT/x", ".git./x", "GIT~1/config"]
)
def test_a_patch_touching_git_metadata_fails_with_patch_invalid(attempt: WorktreeAttempt, path: str) -> None:
    with fails_closed(ExecutionFailure.PATCH_INVALID):
        apply_patch(attempt, new_file_patch(path, "[core]\n\thooksPath = /tmp\n"))
    assert check_and_collect(attempt).files_changed == 0


def test_a_patch_that_does_not_apply_fails_with_patch_does_not_apply_and_gits_first_error_line(
    attempt: WorktreeAttempt,
) -> None:
    stale = (
        "diff --git a/many/f00.txt b/many/f00.txt\n--- a/many/f00.txt\n+++ b/many/f00.txt\n"
        "@@ -1 +1 @@\n-not there\n+new\n"
    )
    with pytest.raises(WorktreeExecutionFailed) as caught:
        apply_patch(attempt, GOOD_PATCH + stale)
    assert caught.value.code == ExecutionFailure.PATCH_DOES_NOT_APPLY
    assert caught.value.message == "error: patch failed: many/f00.txt:1"
    # All or nothing: the good sections before the stale one were not applied either.
    assert check_and_collect(attempt).files_changed == 0


BINARY_PATCH = """\
diff --git a/image.bin b/image.bin
new file mode 100644
index 0000000000000000000000000000000000000000..f4b8f3a8ad2ccf1e5e8c0d0e6b2fd5b5fe4ee0ec
GIT binary patch
literal 5
McmZQzWMXDy000310RR91

literal 0
HcmV?d00001

"""


@pytest.mark.parametrize(
    "patch",
    [
        "",
        "  \n",
        "--- a/old.txt\n+++ b/old.txt\n@@ -1 +1 @@\n-old\n+new\n",
        "From: someone\nSubject: x\n\n" + new_file_patch("x.txt"),
        new_file_patch("x.txt") + "trailing words\n",
        new_file_patch("x.txt") + "--- a/old.txt\n+++ b/old.txt\n@@ -1 +1 @@\n-old\n+new\n",
        BINARY_PATCH,
        "diff --git a/lib b/lib\nnew file mode 160000\nindex 0000000..1234567\n--- /dev/null\n+++ b/lib\n"
        "@@ -0,0 +1 @@\n+Subproject commit 0123456789abcdef0123456789abcdef01234567\n",
        "diff --git a/old.txt b/old.txt\n--- a/old.txt\n+++ b/old.txt\n@@ -1 +1,2 @@\n-old\n+new\n",
        "diff --git x/old.txt y/old.txt\n--- x/old.txt\n+++ y/old.txt\n@@ -1 +1 @@\n-old\n+new\n",
        new_file_patch("tab\tname.txt"),
    ],
    ids=[
        "empty",
        "blank",
        "traditional-diff",
        "email-headers",
        "trailing-garbage",
        "non-git-section",
        "binary",
        "submodule",
        "truncated-hunk",
        "other-prefixes",
        "control-character",
    ],
)
def test_a_patch_that_is_not_a_plain_git_text_patch_fails_with_patch_invalid(
    attempt: WorktreeAttempt, patch: str
) -> None:
    with fails_closed(ExecutionFailure.PATCH_INVALID):
        apply_patch(attempt, patch)


def test_a_patch_over_the_size_bound_fails_with_patch_invalid(attempt: WorktreeAttempt) -> None:
    with fails_closed(ExecutionFailure.PATCH_INVALID):
        apply_patch(attempt, new_file_patch("big.txt", "y\n" * (MAX_PATCH_BYTES // 3 + 1)))


def test_quoted_paths_with_spaces_and_non_ascii_names_apply(attempt: WorktreeAttempt) -> None:
    patch = (
        'diff --git "a/caf\\303\\251 menu.txt" "b/caf\\303\\251 menu.txt"\nnew file mode 100644\n'
        '--- /dev/null\n+++ "b/caf\\303\\251 menu.txt"\n@@ -0,0 +1 @@\n+cr\\303\\250me\n'
    )
    assert apply_patch(attempt, patch).paths == ["café menu.txt"]
    assert [f.path for f in check_and_collect(attempt).files] == ["café menu.txt"]


# --------------------------------------------------------------------------------------------------
# The repository's configuration and the process environment run nothing and redirect nothing


def _trap(directory: Path, name: str, body: str) -> Path:
    script = directory / name
    script.write_text(f"#!/bin/sh\ntouch '{directory / 'ran'}-{name}'\n{body}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return script


def test_hooks_fsmonitor_filters_textconv_and_external_diff_configured_by_the_repository_never_run(
    source: Path, base: str, state: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    traps = tmp_path / "traps"
    traps.mkdir()
    fsmonitor = _trap(traps, "fsmonitor", "exit 1")
    filter_command = _trap(traps, "filter", "cat")
    textconv = _trap(traps, "textconv", 'cat "$1"')
    external = _trap(traps, "external-diff", "exit 0")
    hooks = source / ".git" / "hooks"
    for hook in ("post-checkout", "reference-transaction", "pre-auto-gc", "post-index-change"):
        (hooks / hook).write_text(_trap(traps, hook, "exit 0").read_text())
        (hooks / hook).chmod(0o755)
    (source / ".gitattributes").write_text("*.py filter=trap diff=trap\n")
    git(source, "add", ".gitattributes")
    git(source, "commit", "--quiet", "--no-gpg-sign", "-m", "attributes")
    armed_base = git(source, "rev-parse", "HEAD")
    for key, value in [
        ("core.fsmonitor", str(fsmonitor)),
        ("filter.trap.clean", str(filter_command)),
        ("filter.trap.smudge", str(filter_command)),
        ("filter.trap.required", "true"),
        ("diff.trap.textconv", str(textconv)),
        ("diff.trap.command", str(external)),
        ("diff.external", str(external)),
    ]:
        git(source, "config", key, value)
    # The traps are live: plain git in this repository runs them.
    git(source, "worktree", "add", "--quiet", "--detach", str(tmp_path / "plain"), armed_base)
    (tmp_path / "plain" / "src" / "app.py").write_text("def main():\n    return 5\n")
    git(tmp_path / "plain", "status", "--porcelain")
    git(tmp_path / "plain", "diff")
    fired = {p.name for p in traps.glob("ran-*")}
    assert {"ran-fsmonitor", "ran-filter", "ran-post-checkout", "ran-external-diff"} <= fired
    for marker in traps.glob("ran-*"):
        marker.unlink()
    # The process environment cannot redirect or extend git either.
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "plain" / ".git"))
    monkeypatch.setenv("GIT_EXTERNAL_DIFF", str(external))
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", f"'core.hookspath'='{hooks}'")

    attempt = create_attempt_worktree(source, armed_base, state, RUN)
    apply_patch(
        attempt,
        "diff --git a/src/app.py b/src/app.py\n--- a/src/app.py\n+++ b/src/app.py\n"
        "@@ -1,2 +1,2 @@\n def main():\n-    return 1\n+    return 2\n",
    )
    evidence = check_and_collect(attempt)

    assert sorted(p.name for p in traps.glob("ran-*")) == []
    assert [f.path for f in evidence.files] == ["src/app.py"]
    assert evidence.diff is not None and "+    return 2\n" in evidence.diff


# --------------------------------------------------------------------------------------------------
# What a change may not do to how git itself checks and shows it


@pytest.mark.parametrize("path", [".gitattributes", "src/.gitattributes", "docs/.GitModules"])
def test_a_patch_touching_a_git_control_file_fails_with_patch_invalid(
    attempt: WorktreeAttempt, path: str
) -> None:
    # `*.py -diff` would hide code from the evidence; `* -whitespace` would relax `diff --check`.
    with fails_closed(ExecutionFailure.PATCH_INVALID):
        apply_patch(attempt, new_file_patch(path, "*.py -diff\n"))


def test_a_git_control_file_written_directly_fails_the_check(attempt: WorktreeAttempt) -> None:
    (attempt.worktree / "src" / ".gitattributes").write_text("* -whitespace\n")
    with fails_closed(ExecutionFailure.PATH_OUTSIDE_WORKTREE):
        check_and_collect(attempt)


@pytest.mark.parametrize(
    "path",
    ["docs/a\u0085b.md", "docs/safe\u202egnp.py", "docs/x\u2028## note.md", "docs/zero\u200bwidth.md"],
    ids=["next-line", "bidi-override", "line-separator", "zero-width"],
)
def test_a_patch_path_with_a_control_format_or_separator_character_fails_with_patch_invalid(
    attempt: WorktreeAttempt, path: str
) -> None:
    with fails_closed(ExecutionFailure.PATCH_INVALID):
        apply_patch(attempt, new_file_patch(path))


def test_a_symlink_whose_target_leaves_the_tree_as_written_fails_even_if_it_resolves_inside(
    attempt: WorktreeAttempt,
) -> None:
    # Resolves back into this worktree here, but points outside the repository once the change is
    # taken anywhere else.
    detour = f"../../{attempt.worktree.name}/src/app.py"
    apply_patch(attempt, new_file_patch("docs/link", detour, mode="120000"))
    with fails_closed(ExecutionFailure.PATH_OUTSIDE_WORKTREE):
        check_and_collect(attempt)


def test_an_absolute_symlink_into_the_worktree_fails(attempt: WorktreeAttempt) -> None:
    os.symlink(attempt.worktree / "src" / "app.py", attempt.worktree / "docs" / "abs-link")
    with fails_closed(ExecutionFailure.PATH_OUTSIDE_WORKTREE):
        check_and_collect(attempt)


def test_a_signature_program_the_repository_configures_never_runs(
    source: Path, state: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With log.showSignature and a signed-looking base commit, git would run gpg.program — with the
    # worker's environment, secrets included — while reading the reflog.
    monkeypatch.setenv("SPECIALISTS_ACTION_TOKEN", "secret-token-that-must-not-leak")
    marker = tmp_path / "gpg-ran"
    program = tmp_path / "fake-gpg"
    program.write_text(f"#!/bin/sh\nenv > {marker}\nexit 1\n")
    program.chmod(0o755)
    tree_id = git(source, "rev-parse", "HEAD^{tree}")
    parent = git(source, "rev-parse", "HEAD")
    body = (
        f"tree {tree_id}\nparent {parent}\nauthor a <a@b> 1700000000 +0000\n"
        "committer a <a@b> 1700000000 +0000\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n AAAA\n"
        " -----END PGP SIGNATURE-----\n\nsigned\n"
    )
    signed = git_with_input(source, body, "hash-object", "-t", "commit", "-w", "--stdin")
    git(source, "update-ref", "refs/heads/main", signed)
    git(source, "config", "log.showSignature", "true")
    git(source, "config", "gpg.program", str(program))
    attempt = create_attempt_worktree(source, signed, state, RUN)
    apply_patch(attempt, new_file_patch("docs/new.md"))
    check_and_collect(attempt)
    assert not marker.exists()


def test_git_gets_none_of_the_workers_environment_but_path_home_and_tmpdir(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-git")
    monkeypatch.setenv("SPECIALISTS_ACTION_TOKEN", "not-for-git")
    environment = git_environment()
    assert "OPENAI_API_KEY" not in environment and "SPECIALISTS_ACTION_TOKEN" not in environment
    inherited = {name for name in environment if not name.startswith("GIT_")} - {"LC_ALL"}
    assert inherited <= {"PATH", "HOME", "TMPDIR"}


def git_with_input(cwd: Path, text: str, *args: str) -> str:
    import subprocess

    result = subprocess.run(
        ["git", *args],
        cwd=cwd,
        input=text,
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": os.environ["PATH"], "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull},
    )
    return result.stdout.strip()
