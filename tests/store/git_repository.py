"""Real git working trees for repository tests, built without the user's git configuration, and
registering them as callers of the store do."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from contracts.config import RepositoryConfig, RepositoryRecord
from contracts.identity import Signer
from runtime.git_repository import base_commit_of, checked_working_tree
from store import Store


def git(cwd: Path, *args: str) -> str:
    """Run git in ``cwd`` isolated from the user's and the system's git configuration."""
    environment = {name: value for name, value in os.environ.items() if not name.startswith("GIT_")} | {
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": "Test",
        "GIT_AUTHOR_EMAIL": "test@example.invalid",
        "GIT_COMMITTER_NAME": "Test",
        "GIT_COMMITTER_EMAIL": "test@example.invalid",
    }
    result = subprocess.run(
        ["git", *args], cwd=cwd, env=environment, capture_output=True, text=True, check=True, timeout=30
    )
    return result.stdout.strip()


def make_working_tree(tree: Path) -> Path:
    """A working tree at ``tree`` on branch ``main`` with one commit, a ``feature`` branch and a
    ``docs`` subdirectory."""
    tree.mkdir()
    git(tree, "init", "--quiet", "--initial-branch=main")
    (tree / "docs").mkdir()
    (tree / "docs" / "README.md").write_text("docs\n")
    git(tree, "add", ".")
    git(tree, "commit", "--quiet", "--no-gpg-sign", "-m", "first")
    git(tree, "branch", "feature")
    return tree


ORDERS_README = "# orders-service\n\nReport queries live in reports.sql.\n"
ORDERS_REPORTS_SQL = "SELECT * FROM orders WHERE customer_id = $1 AND created_at >= $2 ORDER BY created_at;\n"


def make_orders_repository(path: Path) -> Path:
    """A git repository at ``path`` with the content of ``control/demo.py``'s demo repository (a
    README.md and a reports.sql, one commit on ``main``): the ``replay:demo`` change job of the
    slow-query work item carries a patch that applies to it."""
    path.mkdir()
    git(path, "init", "--quiet", "--initial-branch=main")
    (path / "README.md").write_text(ORDERS_README)
    (path / "reports.sql").write_text(ORDERS_REPORTS_SQL)
    git(path, "add", ".")
    git(path, "commit", "--quiet", "--no-gpg-sign", "-m", "orders report")
    return path


def register_repository(
    store: Store,
    alias: str,
    path: Path,
    branch: str | None,
    signer: Signer | str,
    config: RepositoryConfig | None = None,
) -> RepositoryRecord:
    """Allow-list ``path`` as ``alias`` the way the operator surface does: the working tree and branch
    are checked with :func:`runtime.git_repository.checked_working_tree`, the store keeps the result."""
    root, checked = checked_working_tree(path, branch)
    if isinstance(signer, str):  # an actor id: the actor's test key signs
        from tests.identity import signer as actor_signer

        signer = actor_signer(signer)
    return store.add_repository(alias, root, checked, signer, config)


def resolve_base_commit(store: Store, alias: str) -> tuple[RepositoryRecord, str]:
    """The repository ``alias`` and its default branch's commit now, as capture reads them: the record
    from the store (``unknown_repository``), the commit from :func:`runtime.git_repository.base_commit_of`
    (``repository_unavailable``)."""
    record = store.get_repository(alias)
    return record, base_commit_of(record)
