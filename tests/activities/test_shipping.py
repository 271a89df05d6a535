"""``activities.shipping.ship_change`` on real git repositories: the reviewed patch committed on a
new local branch (the actor its author) in a temporary worktree, the base branch fast-forwarded or
cleanly merged for flow ``merge``, a conflict reported with the base branch unchanged, an existing
branch never overwritten, and nothing ever pushed."""

from __future__ import annotations

from pathlib import Path

import pytest

from activities.shipping import Author, ShipFailed, ship_change
from contracts.shipping import ShipCode, ShippingFlow, ShippingPolicy
from tests.store.git_repository import git, make_working_tree

AUTHOR = Author("Alice Operator", "alice@actors.specialists.invalid")
BRANCH = ShippingPolicy(flow=ShippingFlow.BRANCH)
MERGE = ShippingPolicy(flow=ShippingFlow.MERGE, base_branch="main")


def _repository(tmp_path: Path) -> tuple[Path, str, bytes]:
    """A repository with ``main`` not checked out (the operator works on ``feature``), its base
    commit, and a patch made against it that changes docs/README.md."""
    tree = make_working_tree(tmp_path / "repo")
    (tree / "notes.txt").write_text("one\ntwo\nthree\n")
    git(tree, "add", ".")
    git(tree, "commit", "--quiet", "--no-gpg-sign", "-m", "notes")
    base = git(tree, "rev-parse", "HEAD")
    git(tree, "branch", "-f", "feature", base)
    git(tree, "checkout", "--quiet", "feature")
    (tree / "docs" / "README.md").write_text("docs\nshipped line\n")
    patch = git(tree, "diff", "--binary", "--full-index", base).encode() + b"\n"
    git(tree, "checkout", "--quiet", "--", ".")
    return tree, base, patch


def _ship(tree: Path, base: str, patch: bytes, policy: ShippingPolicy, key: str = "ORD-1"):  # type: ignore[no-untyped-def]
    return ship_change(
        tree, policy, key=key, run_id="SOR-0123456789ABCDEF", base_commit=base, patch=patch, author=AUTHOR
    )


def test_a_branch_ship_commits_exactly_the_patch_on_a_new_branch_by_the_actor(tmp_path: Path) -> None:
    tree, base, patch = _repository(tmp_path)
    outcome = _ship(tree, base, patch, BRANCH)
    assert outcome.shipped and outcome.branch == "specialists/ORD-1" and not outcome.merged
    assert git(tree, "rev-parse", "specialists/ORD-1") == outcome.commit
    assert git(tree, "rev-parse", f"{outcome.commit}^") == base
    assert (
        git(tree, "log", "-1", "--format=%an <%ae>", outcome.commit)
        == "Alice Operator <alice@actors.specialists.invalid>"
    )
    assert git(tree, "show", f"{outcome.commit}:docs/README.md") == "docs\nshipped line"
    assert git(tree, "rev-parse", "main") == base  # the base branch is untouched
    assert git(tree, "status", "--porcelain") == ""  # the operator's checkout is untouched
    assert git(tree, "worktree", "list", "--porcelain").count("worktree ") == 1  # the temporary one is gone


def test_a_merge_ship_fast_forwards_the_base_branch(tmp_path: Path) -> None:
    tree, base, patch = _repository(tmp_path)
    outcome = _ship(tree, base, patch, MERGE)
    assert outcome.shipped and outcome.merged and outcome.fast_forward
    assert git(tree, "rev-parse", "main") == outcome.commit == outcome.base_after
    assert outcome.base_before == base


def test_a_merge_ship_makes_a_clean_merge_when_the_base_moved_on_elsewhere(tmp_path: Path) -> None:
    tree, base, patch = _repository(tmp_path)
    git(tree, "checkout", "--quiet", "main")
    (tree / "notes.txt").write_text("one\ntwo\nthree\nfour\n")
    git(tree, "commit", "--quiet", "--no-gpg-sign", "-am", "someone else")
    moved = git(tree, "rev-parse", "HEAD")
    git(tree, "checkout", "--quiet", "feature")
    outcome = _ship(tree, base, patch, MERGE)
    assert outcome.shipped and outcome.merged and not outcome.fast_forward
    merge = git(tree, "rev-parse", "main")
    assert merge == outcome.merge_commit and git(tree, "rev-parse", f"{merge}^1") == moved
    assert git(tree, "rev-parse", f"{merge}^2") == outcome.commit
    assert git(tree, "show", f"{merge}:notes.txt").endswith("four")
    assert git(tree, "show", f"{merge}:docs/README.md").endswith("shipped line")


def test_a_conflicting_merge_fails_and_leaves_the_base_branch_unchanged(tmp_path: Path) -> None:
    tree, base, patch = _repository(tmp_path)
    git(tree, "checkout", "--quiet", "main")
    (tree / "docs" / "README.md").write_text("docs\nsomeone else's line\n")
    git(tree, "commit", "--quiet", "--no-gpg-sign", "-am", "conflicting")
    moved = git(tree, "rev-parse", "HEAD")
    git(tree, "checkout", "--quiet", "feature")
    outcome = _ship(tree, base, patch, MERGE)
    assert not outcome.shipped and outcome.code == ShipCode.SHIP_CONFLICT
    assert git(tree, "rev-parse", "main") == moved
    assert git(tree, "rev-parse", "specialists/ORD-1") == outcome.commit  # the branch stays, reported
    assert git(tree, "status", "--porcelain") == ""


def test_an_existing_branch_is_never_overwritten(tmp_path: Path) -> None:
    tree, base, patch = _repository(tmp_path)
    first = _ship(tree, base, patch, BRANCH)
    with pytest.raises(ShipFailed) as refused:
        _ship(tree, base, patch, BRANCH)
    assert refused.value.code is ShipCode.BRANCH_EXISTS
    assert git(tree, "rev-parse", "specialists/ORD-1") == first.commit


def test_a_patch_that_does_not_apply_fails_without_a_branch(tmp_path: Path) -> None:
    tree, base, _ = _repository(tmp_path)
    bad = b"--- a/missing.txt\n+++ b/missing.txt\n@@ -1 +1 @@\n-x\n+y\n"
    with pytest.raises(ShipFailed) as refused:
        _ship(tree, base, bad, BRANCH)
    assert refused.value.code is ShipCode.PATCH_DOES_NOT_APPLY
    assert "specialists/ORD-1" not in git(tree, "branch", "--list")


def test_merging_into_a_checked_out_base_branch_is_refused_before_anything_is_made(tmp_path: Path) -> None:
    tree, base, patch = _repository(tmp_path)
    git(tree, "checkout", "--quiet", "main")
    with pytest.raises(ShipFailed) as refused:
        _ship(tree, base, patch, MERGE)
    assert refused.value.code is ShipCode.NOT_SHIPPABLE and "checked out" in refused.value.message
    assert git(tree, "rev-parse", "main") == base and "specialists/" not in git(tree, "branch", "--list")


def test_nothing_is_pushed_to_a_remote(tmp_path: Path) -> None:
    tree, base, patch = _repository(tmp_path)
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "--quiet", "--bare", str(remote))
    git(tree, "remote", "add", "origin", str(remote))
    git(tree, "push", "--quiet", "origin", "main")
    before = git(remote, "for-each-ref")
    outcome = _ship(tree, base, patch, MERGE)
    assert outcome.shipped and outcome.merged
    assert git(remote, "for-each-ref") == before
