"""Real git working trees for repository tests, built without the user's git configuration."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


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
