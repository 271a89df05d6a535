"""Activities ``ship_item`` and ``read_base_heads`` (docs/architecture.md "Goal queue", "Shipping").

``ship_item`` applies exactly the reviewed patch of a done item's accepted run to the repository, as
the repository's signed shipping policy says: a new local branch ``specialists/<key>`` at the run's
base commit holding one commit (the actor its author), and for ``merge`` the base branch moved to it
(fast-forward) or to a clean merge commit — made in a temporary detached worktree, never in the
operator's checkout, with a compare-and-swap of the base branch's ref. A patch that does not apply
or a merge that conflicts fails and is reported; nothing is forced, and nothing is ever pushed (git
runs with every transport refused). ``read_base_heads`` reads the base-branch head of each
repository the queue guards. git runs only through :mod:`runtime.git`.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from temporalio import activity
from temporalio.exceptions import ApplicationError
from temporalio.service import RPCError, RPCStatusCode

from activities.store_access import SharedStore
from activities.worktree_lifecycle import _filter_pins
from contracts.config import RepositoryRecord
from contracts.errors import OperatorError
from contracts.runs import RunView
from contracts.shipping import (
    BaseHead,
    BaseHeads,
    BaseHeadsRequest,
    ShipCode,
    ShipOutcome,
    ShippingFlow,
    ShippingPolicy,
    ShipWork,
    policy_question,
    ship_branch,
)
from contracts.shipping_patch import reviewed_patch
from contracts.temporal_names import ActivityName, RunMessage
from runtime.git import Git, first_line
from runtime.git_repository import branch_commit

COMMITTER = ("Specialist Orchestrator", "shipping@specialists.invalid")
ACTOR_EMAIL_DOMAIN = "actors.specialists.invalid"


class ShipFailed(Exception):
    """A ship that cannot go on: its code and message (the branch, when one was made, stays)."""

    def __init__(self, code: ShipCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class Author:
    """Who a ship commit is by: the registered actor's name, and an address made from its id."""

    name: str
    email: str


def _check(git: Git, *args: str) -> str:
    return git.text(*args)


def _resolves(git: Git, ref: str) -> str | None:
    result = git.run("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    return result.stdout.decode().strip() if result.returncode == 0 else None


def _checked_out_at(git: Git, branch: str) -> str | None:
    """The working tree where ``branch`` is checked out, or ``None``."""
    listing = git.ok("worktree", "list", "--porcelain").decode("utf-8", "surrogateescape")
    path = None
    for line in listing.splitlines():
        if line.startswith("worktree "):
            path = line[len("worktree ") :]
        elif line == f"branch refs/heads/{branch}":
            return path
    return None


def ship_change(
    repository: Path,
    policy: ShippingPolicy,
    *,
    key: str,
    run_id: str,
    base_commit: str,
    patch: bytes,
    author: Author,
) -> ShipOutcome:
    """Ship ``patch`` (already checked against the reviewed sha256) to ``repository`` under
    ``policy`` as the module docstring says. Raises :class:`ShipFailed` before the branch is made;
    a merge that cannot be made cleanly is reported in the outcome (the branch stays)."""
    source = Git(repository)
    branch = ship_branch(key)
    if source.run("check-ref-format", f"refs/heads/{branch}").returncode != 0:
        raise ShipFailed(ShipCode.NOT_SHIPPABLE, f"{branch!r} is not a valid branch name")
    if _resolves(source, base_commit) != base_commit:
        raise ShipFailed(
            ShipCode.PATCH_DOES_NOT_APPLY, f"the run's base commit {base_commit} is not in {repository}"
        )
    if _resolves(source, f"refs/heads/{branch}") is not None:
        raise ShipFailed(
            ShipCode.BRANCH_EXISTS,
            f"branch {branch!r} already exists in {repository}: nothing is overwritten",
        )
    base = policy.base_branch
    if policy.flow is ShippingFlow.MERGE:
        assert base is not None
        if _resolves(source, f"refs/heads/{base}") is None:
            raise ShipFailed(
                ShipCode.NOT_SHIPPABLE, f"{repository} has no local branch {base!r} to merge into"
            )
        where = _checked_out_at(source, base)
        if where is not None:
            raise ShipFailed(
                ShipCode.NOT_SHIPPABLE,
                f"branch {base!r} is checked out at {where}: moving it would change that checkout under "
                "its working tree and index; check out another branch there, or ship with flow 'branch'",
            )
    scratch = Path(tempfile.mkdtemp(prefix="specialists-ship-"))
    tree_path = scratch / "tree"
    try:
        source.ok("worktree", "add", "--detach", "--quiet", str(tree_path), base_commit)
        identity = (("user.name", author.name), ("user.email", author.email), ("rerere.enabled", "false"))
        tree = Git(tree_path, (*_filter_pins(tree_path), *identity))
        applied = tree.run("apply", "--index", "--binary", "-", stdin=patch)
        if applied.returncode != 0:
            raise ShipFailed(
                ShipCode.PATCH_DOES_NOT_APPLY,
                f"the reviewed patch does not apply at {base_commit}: {first_line(applied.stderr)}",
            )
        message = (
            f"{key}: the reviewed change of run {run_id}\n\nShipped-by: {author.name} <{author.email}>\n"
        )
        service = (("user.name", COMMITTER[0]), ("user.email", COMMITTER[1]), ("rerere.enabled", "false"))
        committer = (*tree.extra_config[:-3], *service)
        Git(tree_path, committer).ok(
            "commit",
            "--quiet",
            "--no-verify",
            "--no-gpg-sign",
            "--allow-empty-message",
            f"--author={author.name} <{author.email}>",
            "-m",
            message,
        )
        commit = _check(tree, "rev-parse", "HEAD")
        made = source.run("update-ref", f"refs/heads/{branch}", commit, "")
        if made.returncode != 0:
            raise ShipFailed(
                ShipCode.BRANCH_EXISTS, f"branch {branch!r} could not be made: {first_line(made.stderr)}"
            )
        outcome = ShipOutcome(shipped=True, flow=policy.flow, branch=branch, commit=commit, base_branch=base)
        if policy.flow is ShippingFlow.BRANCH:
            return outcome
        assert base is not None
        return _merge(source, tree, outcome, base, commit, key)
    finally:
        source.run("worktree", "remove", "--force", str(tree_path))
        source.run("worktree", "prune")
        shutil.rmtree(scratch, ignore_errors=True)


def _merge(source: Git, tree: Git, outcome: ShipOutcome, base: str, commit: str, key: str) -> ShipOutcome:
    before = _resolves(source, f"refs/heads/{base}")
    assert before is not None
    if tree.run("merge-base", "--is-ancestor", before, commit).returncode == 0:
        target, fast_forward = commit, True
    else:
        tree.ok("checkout", "--quiet", "--detach", before)
        merged = tree.run(
            "merge",
            "--no-ff",
            "--no-edit",
            "--no-verify",
            "--no-gpg-sign",
            "-m",
            f"{key}: merge {outcome.branch}",
            commit,
        )
        if merged.returncode != 0:
            tree.run("merge", "--abort")
            return outcome.model_copy(
                update={
                    "shipped": False,
                    "code": ShipCode.SHIP_CONFLICT.value,
                    "message": f"{outcome.branch} does not merge cleanly into {base} ({before[:12]}): "
                    f"{base} is unchanged; the branch stays for a person to merge",
                    "base_before": before,
                    "base_after": before,
                }
            )
        target, fast_forward = _check(tree, "rev-parse", "HEAD"), False
    moved = source.run("update-ref", f"refs/heads/{base}", target, before)
    if moved.returncode != 0:
        return outcome.model_copy(
            update={
                "shipped": False,
                "code": ShipCode.SHIP_CONFLICT.value,
                "message": f"{base} moved while it was being merged into: it is unchanged "
                f"({first_line(moved.stderr)})",
                "base_before": before,
            }
        )
    return outcome.model_copy(
        update={
            "merged": True,
            "fast_forward": fast_forward,
            "merge_commit": None if fast_forward else target,
            "base_before": before,
            "base_after": target,
        }
    )


class ShippingActivities:
    """``ship_item`` and ``read_base_heads``, on the worker's store and Temporal client."""

    def __init__(self, store: SharedStore) -> None:
        self._store = store

    @activity.defn(name=ActivityName.READ_BASE_HEADS)
    def read_base_heads(self, request: BaseHeadsRequest) -> BaseHeads:
        """The head of each repository's default branch (the branch runs start from); a repository
        that cannot be read is named with why, and the queue tries it again next time."""
        heads: list[BaseHead] = []
        unreadable: dict[str, str] = {}
        for alias in request.aliases:
            try:
                record = self._store.get().get_repository(alias)
                commit = branch_commit(Path(record.path), record.default_branch)
            except OperatorError as error:
                unreadable[alias] = f"{error.code}: {error.message}"
                continue
            heads.append(BaseHead(repo_alias=alias, branch=record.default_branch, commit=commit))
        return BaseHeads(heads=heads, unreadable=unreadable)

    @activity.defn(name=ActivityName.SHIP_ITEM)
    async def ship_item(self, work: ShipWork) -> ShipOutcome:
        """Ship the done item ``work.key`` (see the module docstring). A refusal or failure is the
        outcome's code and message; the activity is not retried (a second try would find the branch)."""
        try:
            record = self._store.get().get_repository(work.repo_alias)
            actor = self._store.get().get_actor(work.actor)
        except OperatorError as error:
            return ShipOutcome(shipped=False, code=error.code, message=error.message)
        policy = record.config.shipping
        if policy is None:
            return ShipOutcome(
                shipped=False, code=ShipCode.SHIPPING_POLICY_MISSING, message=policy_question(record.alias)
            )
        if not record.active:
            return ShipOutcome(
                shipped=False,
                code=ShipCode.NOT_SHIPPABLE,
                message=f"repository {record.alias!r} is deactivated",
            )
        view = await self._run_view(work.run_id)
        try:
            found = reviewed_patch(view.execution)
            if found is None:
                raise ShipFailed(
                    ShipCode.NOTHING_TO_SHIP, f"run {work.run_id} changed nothing: there is no patch to ship"
                )
            if found.sha256 != work.patch_sha256:
                raise ShipFailed(
                    ShipCode.PATCH_MISMATCH,
                    f"run {work.run_id}'s reviewed patch has sha256 {found.sha256}, not {work.patch_sha256}",
                )
            patch = _patch_bytes(found.inline, found.path)
            if hashlib.sha256(patch).hexdigest() != work.patch_sha256:
                raise ShipFailed(
                    ShipCode.PATCH_MISMATCH,
                    f"the patch file of run {work.run_id} no longer has the reviewed sha256 "
                    f"{work.patch_sha256}",
                )
            guarded_before = _head(record)
            outcome = ship_change(
                Path(record.path),
                policy,
                key=work.key,
                run_id=work.run_id,
                base_commit=found.base_commit,
                patch=patch,
                author=Author(actor.name, f"{actor.id}@{ACTOR_EMAIL_DOMAIN}"),
            )
        except ShipFailed as failed:
            return ShipOutcome(shipped=False, code=failed.code, message=failed.message, flow=policy.flow)
        return outcome.model_copy(
            update={
                "guarded_branch": record.default_branch,
                "guarded_before": guarded_before,
                "guarded_head": _head(record),
            }
        )

    async def _run_view(self, run_id: str) -> RunView:
        handle = activity.client().get_workflow_handle(run_id)
        try:
            view: RunView = await handle.query(RunMessage.VIEW, result_type=RunView)
        except RPCError as error:
            if error.status == RPCStatusCode.NOT_FOUND:
                raise ApplicationError(f"no run {run_id}", type="unknown_run", non_retryable=True) from None
            raise
        return view


def _head(record: RepositoryRecord) -> str | None:
    try:
        return branch_commit(Path(record.path), record.default_branch)
    except OperatorError:
        return None


def _patch_bytes(inline: str | None, path: str | None) -> bytes:
    if inline is not None:
        return inline.encode("utf-8")
    assert path is not None
    try:
        return Path(path).read_bytes()
    except OSError as error:
        raise ShipFailed(
            ShipCode.PATCH_UNAVAILABLE,
            f"the reviewed patch file {path} cannot be read on this worker ({error.strerror}): ship from "
            "the worker host that made it",
        ) from None
