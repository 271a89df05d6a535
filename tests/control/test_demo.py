"""``make demo``'s fixed parts, without a Temporal server: the worktree run's work item has every
``replay:demo`` recording its jobs look up (every pass of its review wave included), the recorded
change applies to the demo repository and passes the executor's checks, the diff stat and the review
summary the demo prints; and the demo's goal queue part on the
shared dev server, through the real ``WorkQueue`` workflow: items added, the gap refusal, dispatch,
round 1 FAIL, the re-dispatch carrying its findings, round 2 PASS and done. (``make demo`` itself is
the end to end run.)"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from temporalio.client import Client

from activities.change_evidence import check_and_collect
from activities.config import DEFAULT_RECORDINGS_DIR
from activities.patch_checks import apply_patch
from activities.worktree_lifecycle import create_attempt_worktree
from catalog.loader import load_catalog
from catalog.router import route
from contracts.execution import ExecutionRecord
from contracts.output import JobKind, SpecialistOutput, check_output_for_job
from control.demo import READ_ONLY_EXAMPLE, demo_repository, example_work_items, worktree_work_item
from control.demo_views import diff_stat_lines
from tests.control.cli_harness import ACTION_TOKEN, Cli
from tests.store.git_repository import git


def _recording(profile: str, kind: str, title: str) -> dict[str, Any]:
    data = json.loads((DEFAULT_RECORDINGS_DIR / "demo.json").read_text(encoding="utf-8"))
    for entry in data["recordings"]:
        if (entry["profile"], entry["kind"], entry["title"]) == (profile, kind, title):
            return dict(entry["response"])
    raise AssertionError(f"no replay:demo recording for {profile} {kind} on {title!r}")


def _change() -> SpecialistOutput:
    item = worktree_work_item(dict(example_work_items())[READ_ONLY_EXAMPLE])
    decision = route(item, load_catalog())
    output = SpecialistOutput.model_validate(_recording(decision.primary, "change", item.title))
    check_output_for_job(
        output,
        kind=JobKind.ANALYSIS,
        profile_id=decision.primary,
        evidence_ids=list(item.evidence_refs),
        expects_patch=True,
    )
    review = SpecialistOutput.model_validate(_recording(decision.reviewer, "review", item.title))
    check_output_for_job(
        review, kind=JobKind.REVIEW, profile_id=decision.reviewer, evidence_ids=list(item.evidence_refs)
    )
    return output


def test_the_recorded_change_applies_to_the_demo_repository_and_passes_the_executors_checks(
    tmp_path: Path,
) -> None:
    patch = _change().patch
    assert patch is not None
    repository = demo_repository(tmp_path)
    base = git(repository, "rev-parse", "HEAD")
    attempt = create_attempt_worktree(repository, base, tmp_path / "state", "SOR-DEMOTEST00000001")
    apply_patch(attempt, patch)
    evidence = check_and_collect(attempt)
    assert evidence.base_commit == base and evidence.files_changed == 2
    assert git(attempt.worktree, "diff", "--check") == ""

    lines = diff_stat_lines(ExecutionRecord(actor="demo-operator", evidence=evidence))
    assert lines[:-1] == [
        "modified  README.md  +2 -0",
        "added     migrations/0001_orders_customer_created_idx.sql  +3 -0",
    ]
    assert lines[-1].startswith(f"2 files changed (diff sha256 {evidence.diff_sha256[:16]}")


def _demo_runs() -> list[tuple[Any, Any]]:
    """The work item and tier of each demo run that makes model passes."""
    from contracts.enums import Tier

    shipped = dict(example_work_items())[READ_ONLY_EXAMPLE]
    fix = worktree_work_item(shipped)
    return [(shipped, Tier.READ_ONLY), (fix, Tier.WORKTREE), (fix, Tier.PR_READY)]


def test_every_review_pass_of_the_demos_runs_has_a_replay_demo_answer_that_holds() -> None:
    """The read_only run's single review and every pass of the worktree and pr_ready runs' review
    wave (the reviewer on the overall and data axes, code-reviewer on the code axis) are answered."""
    from activities.providers.base import CompletionRequest, JobIdentity
    from activities.providers.replay import ReplayProvider
    from catalog.orchestration import catalog_reviewers, decide

    catalog = load_catalog()
    provider = ReplayProvider(DEFAULT_RECORDINGS_DIR)
    answered = []
    for item, tier in _demo_runs():
        decision = route(item, catalog)
        orchestration = decide(item, decision, tier, reviewers=catalog_reviewers(catalog))
        profiles = [p.profile for p in orchestration.roster] or [decision.reviewer]
        for profile in profiles:
            identity = JobIdentity(profile_id=profile, kind=JobKind.REVIEW, title=item.title, task=item.title)
            request = CompletionRequest(model_name="demo", instructions="", context="", identity=identity)
            output = SpecialistOutput.model_validate_json(provider.complete(request))
            check_output_for_job(
                output, kind=JobKind.REVIEW, profile_id=profile, evidence_ids=list(item.evidence_refs)
            )
            answered.append((tier.value, profile, output.verdict))
    assert ("worktree", "code-reviewer", "agree") in answered
    assert ("pr_ready", "code-reviewer", "agree") in answered
    assert all(verdict == "agree" for _, _, verdict in answered)


def _wave_view(*passes: Any) -> Any:
    import datetime as dt

    from contracts.review_waves import WaveRecord
    from contracts.runs import RunStatus, RunView

    return RunView(
        run_id="SOR-DEMOWAVE00000001",
        status=RunStatus.AWAITING_DECISION,
        tier=None,
        automatic=False,
        route=None,
        contract=None,
        contract_sha256=None,
        result=None,
        review=passes[0].output,
        decision=None,
        request_digest="",
        created_at=dt.datetime(2026, 12, 2, tzinfo=dt.UTC),
        audit=[],
        wave=WaveRecord(passes=list(passes)),
    )


def _pass(index: int, profile: str, axes: list[str], output: Any = None, error: str | None = None) -> Any:
    from contracts.pass_records import PassOutcome
    from contracts.review_waves import WavePass

    return WavePass(
        index=index,
        profile=profile,
        axes=axes,
        questions=[],
        job_id=f"SOR-DEMOWAVE00000001-review-{index}",
        outcome=PassOutcome.COMPLETED if output is not None else PassOutcome.FAILED,
        output=output,
        error_type=error,
    )


def _review(profile: str) -> SpecialistOutput:
    title = dict(example_work_items())[READ_ONLY_EXAMPLE].title
    return SpecialistOutput.model_validate(_recording(profile, "review", title))


def test_the_demo_summary_says_agree_for_a_wave_only_when_every_pass_agreed() -> None:
    from control.demo_views import failed_review_passes, review_lines

    overall = _pass(1, "backend-architect", ["overall", "data"], _review("backend-architect"))
    code = _pass(2, "code-reviewer", ["code"], _review("code-reviewer"))
    view = _wave_view(overall, code)
    assert review_lines(view) == [
        "independent review: agree (every one of the wave's 2 passes)",
        "  pass 1 (backend-architect on overall, data): agree (confidence 0.7)",
        "  pass 2 (code-reviewer on code): agree (confidence 0.74)",
    ]
    assert failed_review_passes([("03-slow-query.json", view)]) == []


def test_the_demo_summary_names_a_failed_wave_pass_and_does_not_say_agree() -> None:
    from control.demo_views import failed_review_passes, review_lines

    overall = _pass(1, "backend-architect", ["overall", "data"], _review("backend-architect"))
    code = _pass(2, "code-reviewer", ["code"], error="replay_no_recording")
    view = _wave_view(overall, code)
    lines = review_lines(view)
    assert lines[0] == "independent review: NOT agreed: 1 of the wave's 2 passes agree"
    assert lines[2] == "  pass 2 (code-reviewer on code): failed (replay_no_recording)"
    assert failed_review_passes([("03-slow-query.json", view)]) == [
        "SOR-DEMOWAVE00000001 pass 2 (code-reviewer on code): failed (replay_no_recording)"
    ]


def test_the_demo_summary_of_a_single_review_is_its_verdict() -> None:
    from control.demo_views import review_lines

    view = _wave_view(_pass(1, "backend-architect", ["overall"], _review("backend-architect")))
    single = view.model_copy(update={"wave": None})
    assert review_lines(single) == ["independent review: agree (confidence 0.7)"]


def test_the_diff_stat_of_a_failed_execution_says_why() -> None:
    record = ExecutionRecord(actor="demo-operator", failure_type="patch_does_not_apply")
    assert diff_stat_lines(record) == ["no change evidence (execution failed: patch_does_not_apply)"]


def _exported(lines: list[str]) -> dict[str, str]:
    (export,) = [line for line in lines if line.strip().startswith("export ")]
    return dict(word.split("=", 1) for word in shlex.split(export)[1:])


def test_the_demo_says_how_to_look_at_its_runs_afterwards_with_every_variable_the_commands_need(
    tmp_path: Path,
) -> None:
    from control.demo_views import afterwards_lines

    token_file = f"SPECIALISTS_ACTION_TOKEN_FILE={tmp_path / 'action-token'}"
    ui = "http://127.0.0.1:8233/namespaces/default/workflows"
    cli = "/clone/.venv/bin/specialists"
    lines = afterwards_lines(tmp_path, "demo-operator", token_file, cli, ui)

    assert _exported(lines) == {
        "SPECIALISTS_STATE_DIR": str(tmp_path),
        "SPECIALISTS_ACTION_TOKEN_FILE": str(tmp_path / "action-token"),
        "SPECIALISTS_ACTOR_KEY_FILE": str(tmp_path / "demo-operator.key"),
    }
    commands = [line.split("#")[0].strip() for line in lines if "#" in line]
    assert commands == [
        "make dev",
        f"{cli} list",
        f"{cli} web",
        f"{cli} web sign-in CODE --actor demo-operator",
    ]
    shown = "\n".join(lines)
    assert ui in shown and "http://127.0.0.1:8400/" in shown


def test_the_anchor_the_demo_prints_is_its_token_file_else_the_trust_root_never_the_token_itself() -> None:
    from control.demo import anchor_setting

    root = "a" * 64
    assert anchor_setting(root, {"SPECIALISTS_ACTION_TOKEN_FILE": "/clone/.specialists/action-token"}) == (
        "SPECIALISTS_ACTION_TOKEN_FILE=/clone/.specialists/action-token"
    )
    secret = "a-token-given-in-the-environment"
    assert anchor_setting(root, {"SPECIALISTS_ACTION_TOKEN": secret}) == f"SPECIALISTS_TRUST_ROOT={root}"


def _challenge() -> str:
    """A sign-in code as Mission Control's sign-in page shows one."""
    import datetime as dt

    from contracts.identity import ActorKey
    from control.web.sessions import Challenge

    now = dt.datetime.now(dt.UTC)
    return Challenge(ActorKey.generate().public_key, now, now + dt.timedelta(hours=8)).code()


def test_the_variables_the_demo_prints_are_enough_to_read_its_configuration_and_sign_in_to_mission_control(
    tmp_path: Path,
) -> None:
    from control.demo import anchor_setting
    from control.demo_views import afterwards_lines

    cli = Cli.isolated(tmp_path)
    root = cli.call("actors", "register", "demo-operator", "--name", "Demo", "--json").ok()["trust_root"]
    (tmp_path / "state" / "demo-operator.key").write_bytes(cli.key_file("demo-operator").read_bytes())
    (tmp_path / "state" / "demo-operator.key").chmod(0o600)
    token_file = tmp_path / "state" / "action-token"
    token_file.write_text(ACTION_TOKEN + "\n", encoding="utf-8")
    token_file.chmod(0o600)
    bare = cli.without_token().without_key()
    bare.call("actors", "--json").error(4, "trust_root_not_configured")
    for anchor in (
        anchor_setting(root, {"SPECIALISTS_ACTION_TOKEN_FILE": str(token_file)}),
        anchor_setting(root, {}),
    ):
        lines = afterwards_lines(cli.state_dir, "demo-operator", anchor, "specialists", "http://ui")
        printed = bare.with_env(**_exported(lines))
        assert [a["id"] for a in printed.call("actors", "--json").ok()["actors"]] == ["demo-operator"]
        assert printed.call("status", "--json").ok()["configuration_error"] is None
        signed_in = printed.call("web", "sign-in", _challenge(), "--actor", "demo-operator", "--json")
        assert signed_in.ok()["token"]


def test_the_demo_queue_items_recordings_fail_the_first_review_and_pass_the_re_dispatched_one() -> None:
    """What ``replay:demo`` answers the demo queue item's review: a FAIL for the first run's task, a
    PASS for the task a re-dispatch builds (it carries the findings of the FAIL round)."""
    import datetime as dt

    from activities.providers.base import CompletionRequest, JobIdentity
    from activities.providers.replay import ReplayProvider
    from contracts.output import JobKind
    from contracts.queue_dispatch import FINDINGS_HEADING, dispatch_work_item, judge_review
    from contracts.queue_items import ItemProposal, QueueStatus, RoundVerdict, new_item
    from contracts.queue_priority import record_dispatch
    from contracts.queue_transitions import Mover, QueueMove, apply_move
    from control.demo_queue import QUEUE_ITEM

    at = dt.datetime(2026, 12, 2, tzinfo=dt.UTC)
    item = new_item(ItemProposal.model_validate(QUEUE_ITEM), key="DEM-1", at=at, actor="demo-operator")
    item = apply_move(item, QueueMove.APPROVE, Mover.OPERATOR, at=at, actor="demo-operator")
    provider = ReplayProvider(DEFAULT_RECORDINGS_DIR)
    decision = route(dispatch_work_item(item), load_catalog())

    def review(task_item: Any) -> SpecialistOutput:
        work_item = dispatch_work_item(task_item)
        task = f"{work_item.title}\n\n{work_item.description}"
        for kind, profile in ((JobKind.ANALYSIS, decision.primary), (JobKind.REVIEW, decision.reviewer)):
            identity = JobIdentity(profile_id=profile, kind=kind, title=work_item.title, task=task)
            request = CompletionRequest(model_name="demo", instructions="", context="", identity=identity)
            output = SpecialistOutput.model_validate_json(provider.complete(request))
            check_output_for_job(
                output, kind=kind, profile_id=profile, evidence_ids=list(work_item.evidence_refs)
            )
        return output

    def judged(task_item: Any, run_id: str) -> Any:
        active = record_dispatch(task_item, run_id=run_id, mover=Mover.OPERATOR, actor="demo-operator", at=at)
        reviewing = apply_move(active, QueueMove.REVIEW, Mover.SYSTEM, at=at, actor=None)
        return judge_review(reviewing, run_id, review(active), at, None)

    first = judged(item, "SOR-DEMOQUEUE0000001")
    assert first.status is QueueStatus.AI_REVIEW
    assert [r.verdict for r in first.cycle_rounds()] == [RoundVerdict.FAIL]
    assert FINDINGS_HEADING in dispatch_work_item(first).description
    second = judged(first, "SOR-DEMOQUEUE0000002")
    assert second.status is QueueStatus.HUMAN_REVIEW
    assert [r.verdict for r in second.cycle_rounds()] == [RoundVerdict.FAIL, RoundVerdict.PASS]


async def test_the_demo_takes_a_queue_item_through_a_fail_and_a_re_dispatch_to_done(
    temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    from contracts.proofs import ActionProof
    from contracts.queue_dispatch import FINDINGS_HEADING
    from contracts.queue_items import QueueRefusalCode, QueueStatus, RoundVerdict
    from contracts.runs import RunStatus
    from control.demo_queue import run_queue_demo
    from control.runs import get_view
    from tests.workflows.harness import ACTOR, proof
    from tests.workflows.queue_harness import queue_bench

    def sign(target: str, action: str, digest: str) -> ActionProof:
        return proof(target, action, actor=ACTOR, digest=digest)

    async with queue_bench(temporal_client, task_queue, tmp_path) as q:
        story = await run_queue_demo(temporal_client, task_queue, ACTOR, sign)
        q.bench.started.extend(story.runs)
        item = await q.item(story.key)
        first, second = story.runs
        first_view = await get_view(temporal_client, first)
        second_view = await get_view(temporal_client, second)

    # Added: a thin proposal without a repository, and the complete item of the demo repository.
    assert story.thin_key.startswith("Q-") and story.key.startswith("DEM-")
    # The thin proposal's approval is refused, naming every gap; the complete item is approved.
    assert story.refused_code == QueueRefusalCode.ITEM_CONTRACT_INCOMPLETE.value
    assert {"repo_alias", "evidence", "value", "urgency", "risk", "scope.problem"} <= set(story.gaps)
    # Dispatched; round 1 FAILs; the operator's re-dispatch rejects that run and carries its findings.
    assert [r.verdict for r in story.rounds] == [RoundVerdict.FAIL, RoundVerdict.PASS]
    assert [r.run_id for r in story.rounds] == [first, second]
    assert story.rejected_run == first and first_view.status is RunStatus.REJECTED
    assert story.redispatch_task.startswith(FINDINGS_HEADING)
    assert "- round 1 (score 2): the reviewer did not agree (disagree); high:" in story.redispatch_task
    assert second_view.contract is not None and second_view.contract.task.endswith(story.redispatch_task)
    assert second_view.review is not None and second_view.review.verdict == "agree"
    assert second_view.follows == first
    # Round 2 PASSes to human-review, and a person's done accepts the run.
    assert story.statuses == ["proposal", "approved", "active", "ai-review", "active", "human-review", "done"]
    assert story.done_run == second and second_view.status is RunStatus.ACCEPTED
    assert item.status is QueueStatus.DONE
