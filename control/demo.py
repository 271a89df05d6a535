"""``make demo``: the main job on the embedded defaults, end to end.

1. Routes every example work item in ``examples/work-items/`` and prints the decisions.
2. Starts the embedded Temporal dev server (or uses one already listening on the configured address)
   and a worker, registers a demo operator — the trust root of its state, with its own key file
   ``<state>/demo-operator.key`` and, unless one is configured, its own action token — and selects
   the ``replay:demo`` model.
3. Runs every example as a ``recommend`` run, then takes one ``read_only`` run through analysis and
   independent review to an accepted decision.
4. Creates a ``worktree`` run against a small git repository it makes, approves its exact contract
   digest and executes it: the change job's patch is applied with git in a fresh detached worktree at
   the contract's base commit (kept under ``<state>/worktrees/<run>/attempt-<n>``), checked, reviewed
   blind from git's diff, and the change is accepted. Its diff stat is printed.
5. Creates the demo research case (``examples/research/case.json``: five factual and two interpretive
   evidence records) and runs one research team over it: six blinded stages, each an analysis and a
   review, to ``awaiting_human_review``. Its stages, limitations and omissions are printed.
6. Takes the goal queue through one item's life (:mod:`control.demo_queue`): a thin proposal without
   a repository and a complete item are added; the proposal's approval is refused naming its gaps,
   the complete item is approved and dispatched; its run's review FAILs round 1, the operator
   re-dispatches it (the FAILed run rejected, the findings carried into the next run's task), round 2
   PASSes to ``human-review`` and the demo operator marks it ``done``.
7. Prints a summary table (each run's review: for a review wave, every pass's verdict, and
   ``agree`` only when every pass agreed) and the commands to look at it all afterwards (``make dev``
   and the Temporal UI, ``specialists list``, Mission Control and its sign-in), each with the
   variables it needs — the state directory, the trust anchor and the operator's key file — then
   stops what it started. It exits 1 when a decided run did not end accepted, the team or the queue
   item did not finish, or a review pass did not come back.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import shlex
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

from catalog.loader import load_catalog
from contracts.enums import TaskType, Tier
from contracts.ids import new_run_id
from contracts.models import ModelSelection
from contracts.research_teams import TeamStatus, TeamView
from contracts.runs import DecisionOutcome, RunInput, RunStatus, RunView
from contracts.work_item import WorkItem
from control.demo_queue import QueueStory, run_queue_demo
from control.demo_views import (
    afterwards_lines,
    diff_stat_lines,
    failed_review_passes,
    print_routes,
    print_summary,
    print_team,
    verification_lines,
)

EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "examples" / "work-items"
DEMO_ACTOR = "demo-operator"
DEMO_MODEL = "replay:demo"
READ_ONLY_EXAMPLE = "03-slow-query.json"
DEMO_REPOSITORY = "demo-orders"
DEMO_TEAM_CYCLE_SECONDS: Final = 1
DEMO_CASE = Path(__file__).resolve().parent.parent / "examples" / "research" / "case.json"


def example_work_items(directory: Path = EXAMPLES_DIR) -> list[tuple[str, WorkItem]]:
    """Every ``*.json`` work item in ``directory``, sorted by file name. Raises on an invalid file."""
    return [
        (path.name, WorkItem.model_validate_json(path.read_text(encoding="utf-8")))
        for path in sorted(directory.glob("*.json"))
    ]


def worktree_work_item(item: WorkItem) -> WorkItem:
    """The demo's worktree-tier work item: ``item`` as a fix against the demo repository."""
    return item.model_copy(update={"repo_alias": DEMO_REPOSITORY, "task_type": TaskType.FIX})


def ensure_action_token(state_dir: Path) -> bytes:
    """The configured action token, or the demo's own token file ``<state>/action-token`` (0600).

    The demo sets ``SPECIALISTS_ACTION_TOKEN_FILE`` for its own process when no token is configured,
    so its protected actions carry proofs like any operator's.
    """
    from store.action_token import TOKEN_FILE_ENV, load_action_token

    token = load_action_token()
    if token is not None:
        return token
    path = state_dir / "action-token"
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(secrets.token_urlsafe(32) + "\n")
    os.environ[TOKEN_FILE_ENV] = str(path)
    token = load_action_token()
    assert token is not None
    return token


def demo_repository(state_dir: Path) -> Path:
    """A small git repository for the worktree-tier run (created once under the state directory)."""
    path = state_dir / "demo-repository"
    if (path / ".git").is_dir():
        return path
    path.mkdir(parents=True, exist_ok=True)
    (path / "README.md").write_text("# orders-service\n\nReport queries live in reports.sql.\n")
    (path / "reports.sql").write_text(
        "SELECT * FROM orders WHERE customer_id = $1 AND created_at >= $2 ORDER BY created_at;\n"
    )
    from runtime.git import Git

    git = Git(path, (("user.name", "demo"), ("user.email", "demo@example.invalid")))
    git.ok("init", "--quiet", "--initial-branch=main")
    git.ok("add", "README.md", "reports.sql")
    git.ok("commit", "--quiet", "-m", "orders report")
    return path


def ensure_demo_key(state_dir: Path) -> Path:
    """The demo operator's key file ``<state>/demo-operator.key`` (0600), created once; the demo sets
    ``SPECIALISTS_ACTOR_KEY_FILE`` to it for its own process, so its protected actions are signed like
    any operator's. (Its fingerprint is checked against the store when the store is prepared.)"""
    from contracts.identity import ActorKey
    from control.keys import KEY_FILE_ENV, write_key_file

    path = state_dir / f"{DEMO_ACTOR}.key"
    if not path.exists():
        write_key_file(path, ActorKey.generate())
    os.environ[KEY_FILE_ENV] = str(path)
    return path


def demo_signer() -> Any:
    """The demo operator acting with its key (:func:`ensure_demo_key`)."""
    from control.keys import require_signer

    return require_signer(DEMO_ACTOR)


def _prepare_store(database_url: str, token: bytes, repository: Path) -> str:
    """Register the demo operator (the trust root of a fresh demo state, holding the demo's key;
    in a demo state written before per-person keys, it attests what is there), select the replay
    model, allow-list the demo repository. Returns the trust root's fingerprint."""
    from contracts.errors import Refused
    from contracts.identity import ActorKey
    from control.keys import write_key_file
    from control.views import actors_json
    from runtime.git_repository import checked_working_tree
    from store.action_token import load_trust_anchor
    from store.database import open_store

    signer = demo_signer()
    with open_store(database_url, anchor=load_trust_anchor()) as store:
        keyless = store.keyless_actors() if store.needs_bootstrap() else []
        if store.needs_bootstrap() and DEMO_ACTOR in keyless:
            # A demo state written before per-person keys: the demo operator attests what is there
            # (any other actor of it is issued a key in the state directory).
            issued = {}
            for other in keyless:
                if other != DEMO_ACTOR:
                    other_key = ActorKey.generate()
                    write_key_file(repository.parent / f"{other}.key", other_key)
                    issued[other] = other_key.public_key
            store.attest(signer, token=token, issue=issued)
        elif store.needs_bootstrap() and not keyless:
            store.bootstrap_actor(DEMO_ACTOR, "Demo operator", signer.key, token)
        elif not store.actor_exists(DEMO_ACTOR):
            raise Refused(
                "demo_state_foreign",
                f"the state directory's store has actors but not {DEMO_ACTOR!r}: run the demo with "
                "SPECIALISTS_STATE_DIR naming a fresh directory",
            )
        store.require_signer(signer)
        current = store.get_model_selection()
        if current is None or current.selection.primary != DEMO_MODEL:
            store.select_models(ModelSelection(primary=DEMO_MODEL), signer)
        if DEMO_REPOSITORY not in {record.alias for record in store.list_repositories()}:
            root, branch = checked_working_tree(repository, "main")
            store.add_repository(DEMO_REPOSITORY, root, branch, signer)
        trust_root = actors_json(store.list_actors())["trust_root"]
    assert isinstance(trust_root, str)  # the demo operator, at least, is registered
    return trust_root


def anchor_setting(trust_root: str, environ: Mapping[str, str] | None = None) -> str:
    """The trust anchor as the commands the demo prints set it: the action token file the demo used
    (its own, unless one was configured), else — a token given in ``SPECIALISTS_ACTION_TOKEN`` is a
    secret the demo never prints — ``trust_root`` pinned as ``SPECIALISTS_TRUST_ROOT``."""
    from store.action_token import TOKEN_FILE_ENV, TRUST_ROOT_ENV

    env = os.environ if environ is None else environ
    token_file = env.get(TOKEN_FILE_ENV, "")
    if token_file:
        return f"{TOKEN_FILE_ENV}={shlex.quote(str(Path(token_file).resolve()))}"
    return f"{TRUST_ROOT_ENV}={trust_root}"


def cli_command() -> str:
    """How the commands the demo prints call the CLI: the ``specialists`` beside this interpreter
    (``.venv/bin/specialists`` under ``make demo``, which a new shell does not have on ``PATH``),
    else ``specialists``."""
    beside = Path(sys.executable).parent / "specialists"
    return shlex.quote(str(beside)) if beside.is_file() else "specialists"


async def _run_jobs(
    settings: Any, items: list[tuple[str, WorkItem]], token: bytes
) -> tuple[list[tuple[str, RunView]], TeamView | None, QueueStory | None]:
    from runtime.settings import RunBudgets
    from runtime.temporal import connect
    from worker import activity_config, build_worker

    client = await connect(settings)
    # The research coordinator this worker starts (if none runs yet) advances teams in 1 s cycles
    # instead of the deployment default of 60 s, so the demo's team takes seconds, not minutes.
    config = activity_config(
        settings, budgets=RunBudgets(), action_token=token, team_cycle_seconds=DEMO_TEAM_CYCLE_SECONDS
    )
    worker = build_worker(client, task_queue=settings.task_queue, config=config)
    results: list[tuple[str, RunView]] = []
    team: TeamView | None = None
    story: QueueStory | None = None
    async with worker:
        jobs = [(name, item, Tier.RECOMMEND, False) for name, item in items]
        jobs += [(name, item, Tier.READ_ONLY, True) for name, item in items if name == READ_ONLY_EXAMPLE]
        jobs.append(
            (READ_ONLY_EXAMPLE, worktree_work_item(dict(items)[READ_ONLY_EXAMPLE]), Tier.WORKTREE, False)
        )
        jobs.append(
            (READ_ONLY_EXAMPLE, worktree_work_item(dict(items)[READ_ONLY_EXAMPLE]), Tier.PR_READY, False)
        )
        for name, item, tier, enqueue in jobs:
            restore = _set_demo_verify(settings.database_url) if tier is Tier.PR_READY else None
            try:
                view = await _run_one(client, settings, name, item, tier, enqueue)
            finally:
                if restore is not None:
                    restore()
            results.append((name, view))
        team = await _run_team(client, settings)
        print("goal queue:", flush=True)
        story = await _run_queue(client, settings)
    return results, team, story


async def _run_queue(client: Any, settings: Any) -> QueueStory:
    """The goal queue part (:func:`control.demo_queue.run_queue_demo`), signed by the demo operator."""
    from control.actions import proof_for

    def sign(target: str, action: str, digest: str) -> Any:
        return proof_for(run_id=target, action=action, actor=DEMO_ACTOR, digest=digest)

    return await run_queue_demo(client, settings.task_queue, DEMO_ACTOR, sign)


async def _run_team(client: Any, settings: Any) -> TeamView:
    """Create the demo research case and run one research team over it to its end."""
    from contracts.research import CaseInput
    from control.actions import proof_for
    from control.case_inputs import read_input
    from control.research_teams import start_team, team_start_input, wait_for_team
    from store.action_token import load_trust_anchor
    from store.database import open_store

    with open_store(settings.database_url, anchor=load_trust_anchor()) as store:
        store.require_signer(demo_signer())
        case_input = read_input(DEMO_CASE, CaseInput, what="case input", code="invalid_case_input")
        case = store.create_case(case_input, DEMO_ACTOR)
    request_id = f"demo-team-{case.case_id}"
    team = team_start_input(
        case.case_id,
        request_id,
        DEMO_ACTOR,
        lambda team_id, digest: proof_for(
            run_id=team_id, action="team_start", actor=DEMO_ACTOR, digest=digest
        ),
    )
    team_id = team.team_id
    print(
        f"research team {team_id} on case {case.case_id} "
        f"({len(case.active_evidence)} evidence records: "
        f"{sum(1 for record in case.active_evidence if record.kind.factual)} factual)",
        flush=True,
    )
    view, _ = await start_team(client, team, task_queue=settings.task_queue)
    view = await wait_for_team(
        client, team_id, lambda v: v.status.final or v.status.needs_person, timeout=120
    )
    return view


async def _run_one(
    client: Any, settings: Any, name: str, item: WorkItem, tier: Tier, enqueue: bool
) -> RunView:
    """Create one demo run; approve, execute and decide it as its tier needs."""
    from control.actions import proof_for
    from control.runs import (
        approve_run,
        create_run,
        decide_run,
        execute_run,
        request_digest,
        settled,
        wait_for_view,
    )

    run_id = new_run_id()
    draft = RunInput(
        run_id=run_id,
        work_item=item,
        requested_tier=tier,
        enqueue=enqueue,
        request_digest="",
        created_by=DEMO_ACTOR,
    )
    run_input = draft.model_copy(update={"request_digest": request_digest(draft)})
    proof = proof_for(run_id=run_id, action="create", actor=DEMO_ACTOR, digest=run_input.request_digest)
    run_input = run_input.model_copy(update={"proof": proof})
    view, _ = await create_run(client, run_input, task_queue=settings.task_queue)
    view = await wait_for_view(client, view.run_id, settled, timeout=120)
    if view.status is RunStatus.AWAITING_APPROVAL and view.contract_sha256 is not None:
        digest = view.contract_sha256
        base = view.contract.base_commit if view.contract else None
        print(f"  {run_id}  awaiting approval of contract {digest} (base commit {base})")
        proof = proof_for(run_id=run_id, action="approve", actor=DEMO_ACTOR, digest=digest)
        view = await approve_run(client, run_id, DEMO_ACTOR, digest, proof)
        print(f"  {run_id}  approved; executing it (proof bound to the contract digest)")
        proof = proof_for(run_id=run_id, action="execute", actor=DEMO_ACTOR, digest=digest)
        await execute_run(client, run_id, DEMO_ACTOR, proof)
        view = await wait_for_view(client, run_id, settled, timeout=180)
        if view.execution is not None:
            for line in diff_stat_lines(view.execution) + verification_lines(view.execution):
                print(f"    {line}")
    if view.status is RunStatus.AWAITING_DECISION:
        note = (
            "demo: change accepted" if tier in (Tier.WORKTREE, Tier.PR_READY) else "demo: findings accepted"
        )
        proof = proof_for(run_id=run_id, action="decide", actor=DEMO_ACTOR)
        await decide_run(client, run_id, DEMO_ACTOR, DecisionOutcome.ACCEPTED, note, proof)
        view = await wait_for_view(client, run_id, lambda v: v.status.terminal, timeout=30)
    print(f"  {view.run_id}  {tier.value:<9}  {view.status.value:<12}  {name}", flush=True)
    if view.error is not None:
        print(f"    error: {view.error}", flush=True)
    return view


DEMO_VERIFY: Final = (
    (
        "python3",
        "-c",
        "import pathlib, sys; p = pathlib.Path('migrations/0001_orders_customer_created_idx.sql'); "
        "print('migration file present:', p.is_file()); sys.exit(0 if p.is_file() else 1)",
    ),
)
"""The demo repository's verify command for the pr_ready run: the migration file the change adds exists."""


def _set_demo_verify(database_url: str) -> Callable[[], None]:
    """Give the demo repository a ``verify`` command (the pr_ready run's contract captures it); the
    returned function restores the previous configuration. On a machine without bubblewrap the
    configuration also accepts running the command unconfined (``allow_unconfined``), and says so:
    otherwise the run would fail closed (``confinement_unavailable``)."""
    import shutil

    from contracts.config import RepositoryConfig
    from store.action_token import load_trust_anchor
    from store.database import open_store

    unconfined = shutil.which("bwrap", path="/usr/local/bin:/usr/bin:/bin") is None
    if unconfined:
        print(
            "  (bubblewrap is not installed: the demo's verify command may run unconfined, "
            "allow_unconfined = true; install the bubblewrap package to confine it)",
            flush=True,
        )
    with open_store(database_url, anchor=load_trust_anchor()) as store:
        previous = store.get_repository(DEMO_REPOSITORY).config
        config = (previous or RepositoryConfig()).model_copy(
            update={"verify": DEMO_VERIFY, "allow_unconfined": unconfined}
        )
        store.update_repository_config(DEMO_REPOSITORY, config, demo_signer())

    def restore() -> None:
        with open_store(database_url, anchor=load_trust_anchor()) as store:
            store.update_repository_config(DEMO_REPOSITORY, previous or RepositoryConfig(), demo_signer())

    return restore


def main() -> int:
    """Run the demo; returns the exit code."""
    import logging

    from contracts.errors import OperatorError
    from control.dev import dev_server_for
    from infra.devserver import is_reachable
    from runtime.connection import load_connection
    from runtime.logs import configure_logging
    from runtime.settings import Settings

    configure_logging(logging.WARNING)  # the demo prints its own story; the worker's log stays quiet
    catalog = load_catalog()
    items = example_work_items()
    print_routes(catalog, items)
    try:
        settings = Settings.from_env()
        settings.state_dir.mkdir(parents=True, exist_ok=True)
        token = ensure_action_token(settings.state_dir)
        ensure_demo_key(settings.state_dir)
        trust_root = _prepare_store(settings.database_url, token, demo_repository(settings.state_dir))
        server = None
        address = load_connection(settings).address  # TEMPORAL_* or a profile may point elsewhere
        if is_reachable(address):
            print(f"using the Temporal server already on {address}", flush=True)
        elif address == settings.temporal_address:
            server = dev_server_for(settings).start()
            print(f"started the embedded Temporal dev server on {server.address}", flush=True)
        try:
            print("runs:", flush=True)
            results, team, story = asyncio.run(_run_jobs(settings, items, token))
        finally:
            if server is not None:
                server.stop()
    except OperatorError as error:
        sys.stderr.write(f"error [{error.code}]: {error.message}\n")
        return error.exit_code
    print_summary(results)
    if team is not None:
        print_team(team)
    unfinished = [
        f"{view.run_id} ({view.tier.value}) ended {view.status.value}"
        for _, view in results
        if view.tier in (Tier.READ_ONLY, Tier.WORKTREE, Tier.PR_READY)
        and view.status is not RunStatus.ACCEPTED
    ]
    ui = f"http://127.0.0.1:{settings.temporal_ui_port}/namespaces/{settings.namespace}/workflows"
    anchor = anchor_setting(trust_root)
    for line in afterwards_lines(settings.state_dir, DEMO_ACTOR, anchor, cli_command(), ui):
        print(line)
    if team is None or team.status is not TeamStatus.AWAITING_HUMAN_REVIEW:
        status = "did not run" if team is None else f"ended {team.status.value}: {team.error}"
        unfinished.append(f"the research team {status}")
    if story is None or story.final_status != "done":
        ended = "did not run" if story is None else f"ended {story.final_status}"
        unfinished.append(f"the goal queue's item {ended}")
    if unfinished:
        sys.stderr.write(f"error: the demo's decided runs did not end accepted: {'; '.join(unfinished)}\n")
    failed = failed_review_passes(results)
    if failed:
        sys.stderr.write(f"error: review passes of the demo's runs did not come back: {'; '.join(failed)}\n")
    return 1 if unfinished or failed else 0


if __name__ == "__main__":
    sys.exit(main())
