"""Every recorded history in ``tests/histories/`` replays against the current workflow code.

A failure here means a change would break runs already in flight: put it behind
``workflow.patched()`` (docs/architecture.md "Temporal conventions") instead of changing the command sequence.

``tests/histories/*.json`` are the current recordings (``python -m tests.histories.record``). Older
recordings stay and replay too, each proving a change sits behind its patch marker:

- ``v1/``: before a protected create was authorised (runs created enqueued or automatic started
  without the authorisation step);
- ``v2/``: before a ``ModelJob`` drove each model attempt itself (Temporal retried the activity) and
  before runs recorded a ``model_attempt`` audit event per call;
- ``v3/``: before a ``ModelJob`` built its pack and asked for leases with local activities, and
  before the ``ModelCeiling`` answered lease requests by update (its own ``workflow-ids.json``);
- ``v4/``: before a run upserted its search attributes at most once per workflow task, its final
  status in the task that closes it (its own ``workflow-ids.json``);
- ``v5/``: before a run and a ``ModelJob`` each recorded one consolidated patch marker
  (``PATCH_RUN_V5``, ``PATCH_JOB_V5``) instead of one per behaviour (its own ``workflow-ids.json``);
- ``v6/``: before the patches that came after those (a named creator's proof, a leased call's class
  pools, …) joined ``PATCH_RUN_V6`` and ``PATCH_JOB_V6``: a run or job recorded then asks each of
  them at its first use, a marker and a ``TemporalChangeVersion`` upsert of its own (its own
  ``workflow-ids.json``).

``queue/intake/`` holds a ``WorkQueue`` that took intake scans (``python -m
tests.histories.record_queue_intake``, patch ``queue-intake-scan``).
``queue/spec/`` holds a ``WorkQueue`` that took two spec passes and the first pass's ``ModelJob``
(``python -m tests.histories.record_queue_spec``, patch ``queue-spec-pass``; its own
``workflow-ids.json``).
``queue/beyond/`` holds a ``WorkQueue`` that took two beyond-source scans and the first pass's
``ModelJob`` (``python -m tests.histories.record_queue_beyond``, patch ``queue-intake-beyond``).
``intake_sweep/`` holds an ``IntakeSweep`` of the ``intake-scan`` schedule and the ``WorkQueue`` that
took the scans of two such sweeps (``python -m tests.histories.record_intake_sweep``, patches
``queue-scheduled-intake`` and ``queue-intake-names-sweep``; its own ``workflow-ids.json``);
``intake_sweep/v1/`` the same as recorded before the scan's events named the sweep.
``queue/`` holds the ``WorkQueue`` histories (``python -m tests.histories.record_queue``): an execution
that ends in continue-as-new, the one after it, and a queue that dispatches a run and follows it (its
own ``workflow-ids.json``), one whose autopilot fills its slot by itself and one whose autopilot
re-dispatches after each FAIL; ``queue/v1/`` the first two
as recorded before the queue dispatched runs, ``queue/v2/`` the first three before the autopilot did.

``probes/`` holds a read_only run whose analysis asked for a probe that an operator approved (after a
refused approval naming another digest) and the run ran (``python -m tests.histories.record_probes``),
with its two ``ModelJob`` histories (its own ``workflow-ids.json``).

``schedules/`` holds two sweeps of the daily case analysis, triggered one after the other, and the run
the first started under the schedule's grant (``python -m tests.histories.record_case_sweep``, patch
``case-sweep-grant``; its own ``workflow-ids.json``).
``teams/`` holds ``ResearchTeam`` histories (``python -m tests.histories.record_teams``), one per team
path, the first stage's two ``ModelJob`` histories of the completed team and the
``ResearchCoordinator`` history of the recording (its own ``workflow-ids.json``); ``teams/v1/`` the
team histories recorded before teams were admitted and advanced by the coordinator.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from tests.workflows.harness import within
from tests.workflows.research_harness import payload_text
from worker import WORKFLOWS, sandbox_runner
from workflows.model_ceiling import PATCH_LEASE_RECORDS, PATCH_RAMP
from workflows.model_job import (
    PATCH_ATTEMPTS_IN_WORKFLOW,
    PATCH_CLASS_POOLS,
    PATCH_JOB_V5,
    PATCH_JOB_V6,
    PATCH_LOCAL_PREPARE,
)
from workflows.probes import PATCH_PROBE_REQUESTS
from workflows.queue_archive import PATCH_ARCHIVE_ENDED
from workflows.queue_following import PATCH_LOCAL_READS
from workflows.queue_intake import PATCH_BEYOND, PATCH_INTAKE, PATCH_SCHEDULED_INTAKE
from workflows.queue_spec import PATCH_SPEC
from workflows.research_team import PATCH_COORDINATED
from workflows.review_wave import PATCH_REVIEW_WAVES
from workflows.run_jobs import PATCH_AUDIT_MODEL_ATTEMPTS
from workflows.specialist_run import (
    PATCH_AUTHORIZE_CREATE,
    PATCH_CASE_SWEEP_GRANT,
    PATCH_CREATOR_PROVED,
    PATCH_ONE_UPSERT_PER_TASK,
    PATCH_RUN_V5,
    PATCH_RUN_V6,
    PATCH_TELLS_QUEUE,
    RUN_V5_LATER,
)
from workflows.work_queue import PATCH_AUTOPILOT, PATCH_ITEM_STATUS, PATCH_SWEEP_NAMED, PATCH_TRACK_RUNS

HISTORIES = Path(__file__).resolve().parent.parent / "histories"
WORKFLOW_IDS = "workflow-ids.json"  # not a history: which id each current recording ran under
CURRENT = sorted(path for path in HISTORIES.glob("*.json") if path.name != WORKFLOW_IDS)
V1 = sorted((HISTORIES / "v1").glob("*.json"))
V2 = sorted((HISTORIES / "v2").glob("*.json"))
V3 = sorted(path for path in (HISTORIES / "v3").glob("*.json") if path.name != WORKFLOW_IDS)
V4 = sorted(path for path in (HISTORIES / "v4").glob("*.json") if path.name != WORKFLOW_IDS)
V5 = sorted(path for path in (HISTORIES / "v5").glob("*.json") if path.name != WORKFLOW_IDS)
V6 = sorted(path for path in (HISTORIES / "v6").glob("*.json") if path.name != WORKFLOW_IDS)
TEAMS = sorted(path for path in (HISTORIES / "teams").glob("*.json") if path.name != WORKFLOW_IDS)
TEAMS_V1 = sorted(path for path in (HISTORIES / "teams" / "v1").glob("*.json") if path.name != WORKFLOW_IDS)
QUEUE = sorted(path for path in (HISTORIES / "queue").glob("*.json") if path.name != WORKFLOW_IDS)
QUEUE_V1 = sorted(path for path in (HISTORIES / "queue" / "v1").glob("*.json") if path.name != WORKFLOW_IDS)
QUEUE_INTAKE = sorted(
    path for path in (HISTORIES / "queue" / "intake").glob("*.json") if path.name != WORKFLOW_IDS
)
QUEUE_SPEC = sorted(
    path for path in (HISTORIES / "queue" / "spec").glob("*.json") if path.name != WORKFLOW_IDS
)
QUEUE_BEYOND = sorted(
    path for path in (HISTORIES / "queue" / "beyond").glob("*.json") if path.name != WORKFLOW_IDS
)
QUEUE_ARCHIVE = sorted(
    path for path in (HISTORIES / "queue" / "archive").glob("*.json") if path.name != WORKFLOW_IDS
)
QUEUE_V2 = sorted(path for path in (HISTORIES / "queue" / "v2").glob("*.json") if path.name != WORKFLOW_IDS)
QUEUE_V3 = sorted(path for path in (HISTORIES / "queue" / "v3").glob("*.json") if path.name != WORKFLOW_IDS)
PROBES = sorted(path for path in (HISTORIES / "probes").glob("*.json") if path.name != WORKFLOW_IDS)
SCHEDULES = sorted(path for path in (HISTORIES / "schedules").glob("*.json") if path.name != WORKFLOW_IDS)
INTAKE_SWEEP = sorted(
    path for path in (HISTORIES / "intake_sweep").glob("*.json") if path.name != WORKFLOW_IDS
)
INTAKE_SWEEP_V1 = sorted(
    path for path in (HISTORIES / "intake_sweep" / "v1").glob("*.json") if path.name != WORKFLOW_IDS
)
ALL = [
    *CURRENT,
    *V1,
    *V2,
    *V3,
    *V4,
    *V5,
    *V6,
    *TEAMS,
    *TEAMS_V1,
    *QUEUE,
    *QUEUE_V1,
    *QUEUE_V2,
    *QUEUE_V3,
    *QUEUE_INTAKE,
    *QUEUE_ARCHIVE,
    *QUEUE_SPEC,
    *QUEUE_BEYOND,
    *PROBES,
    *SCHEDULES,
    *INTAKE_SWEEP,
    *INTAKE_SWEEP_V1,
]
TEAM_PATHS = {"completed", "adjudicated", "blocked_retried_stopped", "cancelled", "invalidated"}

V1_PATHS = {
    "recommended",
    "accepted",
    "rejected",
    "cancelled_ready",
    "cancelled_while_running",
    "failed_automation_off",
    "failed_output_schema",
    "accepted_after_fallback",
    "expired",
}
V2_PATHS = V1_PATHS | {
    "approved_cancelled",
    "approval_refused_then_approved",
    "approval_expired",
    "failed_create_unauthorised",
}
V3_PATHS = V2_PATHS | {"accepted_after_retry", "accepted_under_ceiling"}
V4_PATHS = V3_PATHS | {"executed_accepted", "executed_failed_closed"}
V5_PATHS = V4_PATHS | {"worktree_pruned"}
V6_PATHS = V5_PATHS | {"queue_run", "review_wave"}
CURRENT_PATHS = V5_PATHS  # the run paths tests.histories.record drives
# Paths whose run is created enqueued or automatic: the create is a protected action.
PROTECTED_CREATE_PATHS = {
    "rejected",
    "cancelled_while_running",
    "failed_automation_off",
    "failed_output_schema",
    "accepted_after_fallback",
    "expired",
    "failed_create_unauthorised",
    "accepted_after_retry",
    "accepted_under_ceiling",
}
# Paths whose run executes an approved worktree run (the change job and the worktree activity).
EXECUTE_PATHS = {"executed_accepted", "executed_failed_closed"}
# Paths whose run sees at least one model job end (and so audits its attempts).
MODEL_JOB_PATHS = {
    "accepted",
    "cancelled_while_running",
    "rejected",
    "failed_output_schema",
    "accepted_after_fallback",
    "accepted_after_retry",
    "accepted_under_ceiling",
    *EXECUTE_PATHS,
}


def _names(paths: list[Path]) -> set[str]:
    return {path.name.split(".")[0] for path in paths}


def _patches(path: Path) -> list[str]:
    """The ``workflow.patched()`` ids recorded in a history file."""
    found = []
    for event in json.loads(path.read_text(encoding="utf-8"))["events"]:
        marker = event.get("markerRecordedEventAttributes")
        if marker and marker["markerName"] == "core_patch":
            for payload in marker["details"]["patch-data"]["payloads"]:
                found.append(json.loads(base64.b64decode(payload["data"]))["id"])
    return found


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}" if path.parent != HISTORIES else path.stem


def test_a_history_is_recorded_for_every_run_path() -> None:
    assert _names(CURRENT) == CURRENT_PATHS
    assert _names(V1) == V1_PATHS
    assert _names(V2) == V2_PATHS
    assert _names(V3) == V3_PATHS
    assert _names(V4) == V4_PATHS
    assert _names(V5) == V5_PATHS
    assert _names(V6) == V6_PATHS
    assert _names(TEAMS) == TEAM_PATHS | {"coordinator"}
    assert _names(TEAMS_V1) == TEAM_PATHS


def _expected_run_patches(
    name: str, *, audits_attempts: bool, one_upsert_per_task: bool = False
) -> list[str]:
    expected = [PATCH_ONE_UPSERT_PER_TASK] if one_upsert_per_task else []
    if name in PROTECTED_CREATE_PATHS:
        expected.append(PATCH_AUTHORIZE_CREATE)
    if audits_attempts and name in MODEL_JOB_PATHS:
        expected.append(PATCH_AUDIT_MODEL_ATTEMPTS)
    return expected


def test_current_histories_carry_one_consolidated_patch_and_older_ones_predate_theirs() -> None:
    for path in CURRENT:
        if path.stem.endswith(".ceiling"):  # the ModelCeiling workflow: no acquire for a held lease
            assert _patches(path) == [PATCH_RAMP], path.name
        elif "." in path.stem:  # a ModelJob child: one marker for every behaviour
            assert _patches(path) == [PATCH_JOB_V6], path.name
        elif path.stem == "worktree_pruned":  # the WorktreePrune workflow
            assert _patches(path) == [], path.name
        else:  # a run: one marker for every behaviour, whatever its path reaches
            assert _patches(path) == [PATCH_RUN_V6], path.name
    for path in V6:  # the previous marker, then each later id the path reached
        if path.stem.endswith(".ceiling") or path.stem == "worktree_pruned":
            continue
        first, *later = _patches(path)
        if "." in path.stem:
            assert first == PATCH_JOB_V5 and set(later) <= {PATCH_CLASS_POOLS}, path.name
        else:
            assert first == PATCH_RUN_V5 and set(later) <= set(RUN_V5_LATER), path.name
    v6_patches = {patch for path in V6 for patch in _patches(path)}
    assert {PATCH_CREATOR_PROVED, PATCH_CLASS_POOLS} <= v6_patches
    # A goal queue's run that told its queue, and a run whose review was a wave (recorded from the
    # tests that drive them, before run-v6).
    assert _patches(HISTORIES / "v6" / "queue_run.json") == [PATCH_RUN_V5, PATCH_TELLS_QUEUE]
    assert _patches(HISTORIES / "v6" / "review_wave.json") == [PATCH_RUN_V5, PATCH_REVIEW_WAVES]
    for path in V5:
        if path.stem.endswith(".ceiling") or path.stem == "worktree_pruned":
            assert _patches(path) == [], path.name
        elif "." in path.stem:
            assert _patches(path) == [PATCH_ATTEMPTS_IN_WORKFLOW, PATCH_LOCAL_PREPARE], path.name
        else:
            expected = _expected_run_patches(path.stem, audits_attempts=True, one_upsert_per_task=True)
            assert _patches(path) == expected, path.name
    for path in V4:
        if path.stem.endswith(".ceiling"):
            assert _patches(path) == [], path.name
        elif "." in path.stem:
            assert _patches(path) == [PATCH_ATTEMPTS_IN_WORKFLOW, PATCH_LOCAL_PREPARE], path.name
        else:
            assert _patches(path) == _expected_run_patches(path.stem, audits_attempts=True), path.name
    for path in V3:
        if "." in path.stem and not path.stem.endswith(".ceiling"):
            assert _patches(path) == [PATCH_ATTEMPTS_IN_WORKFLOW], path.name
        elif "." not in path.stem:
            assert _patches(path) == _expected_run_patches(path.stem, audits_attempts=True), path.name
    for path in V2:
        expected = [] if "." in path.stem else _expected_run_patches(path.stem, audits_attempts=False)
        assert _patches(path) == expected, path.name
    assert all(_patches(path) == [] for path in V1)
    assert PATCH_LEASE_RECORDS not in {patch for path in ALL for patch in _patches(path)}
    older = [*V1, *V2, *V3, *V4, *V5, *TEAMS, *TEAMS_V1, *QUEUE, *QUEUE_V1, *QUEUE_V3]
    assert not {PATCH_RUN_V5, PATCH_JOB_V5} & {patch for path in older for patch in _patches(path)}
    assert not {PATCH_RUN_V6, PATCH_JOB_V6} & {patch for path in [*older, *V6] for patch in _patches(path)}
    job_patches = [PATCH_ATTEMPTS_IN_WORKFLOW, PATCH_LOCAL_PREPARE]
    for path in TEAMS:
        expected = (
            job_patches if "." in path.stem else [] if path.stem == "coordinator" else [PATCH_COORDINATED]
        )
        assert _patches(path) == expected, path.name
    for path in TEAMS_V1:
        assert _patches(path) == (job_patches if "." in path.stem else []), path.name


def _change_version_upserts(path: Path) -> int:
    """How many upserts of ``TemporalChangeVersion`` (one per patch a new execution asks) a history has."""
    return sum(
        "TemporalChangeVersion" in upsert["searchAttributes"]["indexedFields"]
        for event in json.loads(path.read_text(encoding="utf-8"))["events"]
        if (upsert := event.get("upsertWorkflowSearchAttributesEventAttributes")) is not None
    )


def test_a_run_and_each_of_its_jobs_record_one_patch_marker_and_one_change_version_upsert() -> None:
    for path in CURRENT:
        if path.stem.endswith(".ceiling") or path.stem == "worktree_pruned":
            continue
        assert (len(_patches(path)), _change_version_upserts(path)) == (1, 1), path.name
    # The same read_only path before: one marker and one upsert for each behaviour it reached.
    assert (len(_patches(HISTORIES / "v5" / "accepted.json")), len(_events("v5/accepted.json"))) == (2, 111)
    for job in ("analysis", "review"):
        old = HISTORIES / "v5" / f"accepted.{job}.json"
        assert (len(_patches(old)), _change_version_upserts(old)) == (2, 2)
        assert len(_events(f"v6/accepted.{job}.json")) == len(_events(f"v5/accepted.{job}.json")) - 2
    # Runs that prove their creator, and jobs whose call is leased: before run-v6 and model-job-v6,
    # each later id cost its own marker and upsert.
    for name in ("recommended.json", "accepted.json", "accepted_after_retry.analysis.json"):
        old = HISTORIES / "v6" / name
        assert (len(_patches(old)), _change_version_upserts(old)) == (2, 2), name
        assert len(_events(name)) == len(_events(f"v6/{name}")) - 2, name


def _upserts_by_task(path: Path) -> list[list[list[str]]]:
    """The run's own search-attribute upserts (each its attribute names) in each workflow task
    after the first, in order (TemporalChangeVersion, which patches upsert, left out)."""
    tasks: list[list[list[str]]] = []
    for event in json.loads(path.read_text(encoding="utf-8"))["events"]:
        if event["eventType"] == "EVENT_TYPE_WORKFLOW_TASK_COMPLETED":
            tasks.append([])
        upsert = event.get("upsertWorkflowSearchAttributesEventAttributes")
        if upsert is not None:
            names = sorted(set(upsert["searchAttributes"]["indexedFields"]) - {"TemporalChangeVersion"})
            if names:
                tasks[-1].append(names)
    return tasks[1:]


def _status_values(path: Path) -> list[str]:
    """The values of ``SpecialistStatus`` the run upserted, in order."""
    values = []
    for event in json.loads(path.read_text(encoding="utf-8"))["events"]:
        upsert = event.get("upsertWorkflowSearchAttributesEventAttributes")
        status = upsert["searchAttributes"]["indexedFields"].get("SpecialistStatus") if upsert else None
        if status is not None:
            values.append(json.loads(base64.b64decode(status["data"])))
    return values


ROUTE = ["RiskLevel", "SpecialistProfile", "SpecialistReviewer", "SpecialistStatus", "SpecialistTier"]


def test_current_runs_upsert_once_per_workflow_task_and_their_final_status_as_they_close() -> None:
    runs = [path for path in CURRENT if "." not in path.stem and path.stem != "worktree_pruned"]
    for path in runs:
        tasks = _upserts_by_task(path)
        assert all(len(upserts) <= 1 for upserts in tasks), path.name
        assert tasks[-1] and "SpecialistStatus" in tasks[-1][0], path.name  # the closing task
    # A recommendation's route and status go out together, as the run closes.
    assert [upserts for upserts in _upserts_by_task(HISTORIES / "recommended.json") if upserts] == [[ROUTE]]
    # A read_only run's route goes out with the first status it rests in (ready, here); it passes
    # through queued without waiting, so its status goes from ready straight to running.
    accepted = [upserts for upserts in _upserts_by_task(HISTORIES / "accepted.json") if upserts]
    assert accepted[0] == [sorted([*ROUTE, "RepoAlias"])]
    statuses = ["ready", "running", "reviewing", "awaiting_decision", "accepted"]
    assert _status_values(HISTORIES / "accepted.json") == statuses
    assert _status_values(HISTORIES / "v4" / "accepted.json") == [*statuses[:1], "queued", *statuses[1:]]
    # Before the patch, route and status were upserted apart, and the final status before the
    # closing task's projection.
    old = [upserts for upserts in _upserts_by_task(HISTORIES / "v4" / "recommended.json") if upserts]
    assert old == [[[name for name in ROUTE if name != "SpecialistStatus"], ["SpecialistStatus"]]]


def test_the_team_histories_carry_references_only_and_the_research_jobs_store_their_output() -> None:
    completed = payload_text((HISTORIES / "teams" / "completed.json").read_text(encoding="utf-8"))
    assert "advance_granted" in completed  # admitted and advanced by the coordinator
    analysis = payload_text((HISTORIES / "teams" / "completed.s1-analysis.json").read_text(encoding="utf-8"))
    # The demo case's evidence and the replay outputs never appear in the team's own history; the
    # job's own history does hold them (its pack and the call's result), which shows the search works.
    for text in ("rendered '412'", "Advisory and code agree"):
        assert text not in completed and text in analysis
    for kind in ("analysis", "review"):
        events = _events(f"teams/completed.s1-{kind}.json")
        scheduled = [
            e["activityTaskScheduledEventAttributes"]["activityType"]["name"]  # type: ignore[index]
            for e in events
            if e["eventType"] == "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED"
        ]
        assert scheduled == ["call_model", "store_job_output"], kind


def _ceiling_messages(path: Path) -> tuple[list[str], int]:
    """The signals and updates a ceiling history received, in order, and its grant signals sent."""
    events = json.loads(path.read_text(encoding="utf-8"))["events"]
    received = []
    for event in events:
        if event["eventType"] == "EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED":
            received.append(event["workflowExecutionSignaledEventAttributes"]["signalName"])
        elif event["eventType"] == "EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED":
            accepted = event["workflowExecutionUpdateAcceptedEventAttributes"]["acceptedRequest"]
            received.append("update:" + accepted["input"]["name"])
    grants = [
        e for e in events if e["eventType"] == "EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED"
    ]
    return received, len(grants)


def test_the_ceiling_history_grants_and_takes_back_one_lease_per_call() -> None:
    # The first call starts the ceiling (acquire by signal-with-start; granted by signal); the second
    # finds it running and is granted in the answer to try_acquire, with no signal.
    received, grants = _ceiling_messages(HISTORIES / "accepted_under_ceiling.ceiling.json")
    assert received == ["acquire", "release", "update:try_acquire", "release"]
    assert grants == 1
    received, grants = _ceiling_messages(HISTORIES / "v3" / "accepted_under_ceiling.ceiling.json")
    assert (received, grants) == (["acquire", "release", "acquire", "release"], 2)


def test_the_retry_history_shows_both_attempts_as_activities_with_a_timer_between() -> None:
    events = json.loads((HISTORIES / "accepted_after_retry.analysis.json").read_text(encoding="utf-8"))[
        "events"
    ]
    calls = [
        event
        for event in events
        if event["eventType"] == "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED"
        and event["activityTaskScheduledEventAttributes"]["activityType"]["name"] == "call_model"
    ]
    assert len(calls) == 2
    assert [event["eventType"] for event in events].count("EVENT_TYPE_TIMER_STARTED") == 1


@pytest.mark.parametrize("path", ALL, ids=[_id(path) for path in ALL])
@within(30)
async def test_recorded_history_replays_without_nondeterminism(path: Path) -> None:
    # Recordings since leases name the id they ran under (a ModelJob names its leases with its own
    # id); older ones replay under an id derived from the file name.
    ids_file = path.parent / WORKFLOW_IDS
    ids = json.loads(ids_file.read_text(encoding="utf-8")) if ids_file.exists() else {}
    workflow_id = ids.get(path.stem, path.stem.replace(".", "-"))
    history = WorkflowHistory.from_json(workflow_id, path.read_text(encoding="utf-8"))
    replayer = Replayer(
        workflows=list(WORKFLOWS),
        data_converter=pydantic_data_converter,
        workflow_runner=sandbox_runner(),
    )
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, f"{path.name}: {result.replay_failure}"


def test_the_intake_history_scans_twice_and_records_the_intake_patch() -> None:
    # python -m tests.histories.record_queue_intake: a scan, a rejection, a second scan, a refused one.
    assert [path.name for path in QUEUE_INTAKE] == ["intake.json"]
    # The first scan's handler ran in the first workflow task, before run() asked its patches.
    assert _patches(QUEUE_INTAKE[0]) == [PATCH_INTAKE, PATCH_TRACK_RUNS, PATCH_AUTOPILOT, PATCH_ITEM_STATUS]
    assert _accepted_updates("queue/intake/intake.json") == ["intake", "reject", "intake", "intake"]


def test_the_archive_history_archives_its_ended_items_before_continuing_as_new() -> None:
    # python -m tests.histories.record_queue_archive: items in every status ended 40 days before, adds
    # until the queue continues as new; the done and rejected items are archived first.
    assert [path.name for path in QUEUE_ARCHIVE] == ["queue.json"]
    assert _patches(QUEUE_ARCHIVE[0])[-1] == PATCH_ARCHIVE_ENDED
    events = _events("queue/archive/queue.json")
    archive = [
        event
        for event in events
        if event["eventType"] == "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED"
        and event["activityTaskScheduledEventAttributes"]["activityType"]["name"] == "archive_queue_items"
    ]
    assert len(archive) == 1
    assert events[-1]["eventType"] == "EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW"


def test_the_spec_history_takes_two_spec_passes_each_through_one_model_job() -> None:
    # python -m tests.histories.record_queue_spec: an add, a spec pass, a spec pass with replace.
    assert [path.name for path in QUEUE_SPEC] == ["queue.json", "queue.spec.json"]
    assert PATCH_SPEC in _patches(QUEUE_SPEC[0])
    assert _accepted_updates("queue/spec/queue.json") == ["add", "spec", "spec"]
    children = [
        event for event in _events("queue/spec/queue.json")
        if event["eventType"] == "EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED"
    ]  # fmt: skip
    assert len(children) == 2
    assert _patches(QUEUE_SPEC[1])[0] == PATCH_JOB_V5  # a ModelJob as any run's


def test_the_beyond_history_runs_one_model_job_per_pass_and_records_the_beyond_patch() -> None:
    # python -m tests.histories.record_queue_beyond: two beyond scans, a fabricated quote dropped.
    assert [path.name for path in QUEUE_BEYOND] == ["job.json", "queue.json"]
    assert PATCH_BEYOND in _patches(HISTORIES / "queue" / "beyond" / "queue.json")
    assert _accepted_updates("queue/beyond/queue.json") == ["intake", "intake"]
    queue_activities = [
        event["activityTaskScheduledEventAttributes"]["activityType"]["name"]  # type: ignore[index]
        for event in _events("queue/beyond/queue.json")
        if "activityTaskScheduledEventAttributes" in event
    ]
    assert queue_activities.count("prepare_beyond_scan") == 2
    assert queue_activities.count("check_beyond_quotes") == 2


def test_the_intake_sweep_histories_scan_through_the_queue_under_the_schedules_grant() -> None:
    # python -m tests.histories.record_intake_sweep: two triggered sweeps, one repository deactivated.
    assert [path.name for path in INTAKE_SWEEP] == ["queue.json", "sweep.json"]
    sweep = _events("intake_sweep/sweep.json")
    activities = [
        event["activityTaskScheduledEventAttributes"]["activityType"]["name"]  # type: ignore[index]
        for event in sweep
        if event["eventType"] == "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED"
    ]
    assert activities == ["authorize_action", "list_intake_repositories", "request_intake_scan"]
    # Each scheduled scan is authorised by the grant and the running sweep, then scanned.
    assert _accepted_updates("intake_sweep/queue.json") == ["intake", "intake"]
    assert PATCH_SCHEDULED_INTAKE in _patches(HISTORIES / "intake_sweep" / "queue.json")
    # Since the scan's events name the sweep; the recording from before replays without the marker.
    assert PATCH_SWEEP_NAMED in _patches(HISTORIES / "intake_sweep" / "queue.json")
    assert [path.name for path in INTAKE_SWEEP_V1] == ["queue.json", "sweep.json"]
    assert PATCH_SCHEDULED_INTAKE in _patches(HISTORIES / "intake_sweep" / "v1" / "queue.json")
    assert PATCH_SWEEP_NAMED not in _patches(HISTORIES / "intake_sweep" / "v1" / "queue.json")
    queue_activities = [
        event["activityTaskScheduledEventAttributes"]["activityType"]["name"]  # type: ignore[index]
        for event in _events("intake_sweep/queue.json")
        if event["eventType"] == "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED"
    ]
    assert queue_activities.count("check_intake_sweep") == 2
    assert queue_activities.count("scan_repository") == 2


def _events(name: str) -> list[dict[str, object]]:
    events: list[dict[str, object]] = json.loads((HISTORIES / name).read_text(encoding="utf-8"))["events"]
    return events


def test_the_execute_histories_show_the_update_the_worktree_activity_and_how_it_ended() -> None:
    for name, ended in (("executed_accepted", "COMPLETED"), ("executed_failed_closed", "FAILED")):
        events = _events(f"{name}.json")
        updates = [
            e["workflowExecutionUpdateAcceptedEventAttributes"]["acceptedRequest"]["input"]["name"]  # type: ignore[index]
            for e in events
            if e["eventType"] == "EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED"
        ]
        assert updates.count("execute") == 2, name  # a refused one (unregistered actor), then one
        scheduled = [
            e["activityTaskScheduledEventAttributes"]["activityType"]["name"]  # type: ignore[index]
            for e in events
            if e["eventType"] == "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED"
        ]
        assert scheduled.count("execute_worktree_attempt") == 1, name
        assert any(e["eventType"] == f"EVENT_TYPE_ACTIVITY_TASK_{ended}" for e in events), name


def test_the_coordinator_history_admits_grants_in_cycles_of_at_most_five_and_frees_every_place() -> None:
    events = _events("teams/coordinator.json")
    updates = [
        e["workflowExecutionUpdateAcceptedEventAttributes"]["acceptedRequest"]["input"]["name"]  # type: ignore[index]
        for e in events
        if e["eventType"] == "EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED"
    ]
    signals = [
        e["workflowExecutionSignaledEventAttributes"]["signalName"]  # type: ignore[index]
        for e in events
        if e["eventType"] == "EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED"
    ]
    grants = [
        e for e in events if e["eventType"] == "EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED"
    ]
    assert set(updates) == {"admit"} and len(updates) >= 5
    assert signals.count("team_finished") == 5  # every recorded team gave its place back
    assert signals.count("request_advance") == len(grants) > 0


def _payload(payload: dict[str, Any]) -> Any:
    return json.loads(base64.b64decode(str(payload["data"])))


def _accepted_updates(name: str) -> list[str]:
    return [
        event["workflowExecutionUpdateAcceptedEventAttributes"]["acceptedRequest"]["input"]["name"]  # type: ignore[index]
        for event in _events(name)
        if event["eventType"] == "EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED"
    ]


def test_the_queue_histories_carry_the_tracking_and_autopilot_patches_and_the_older_ones_predate_them() -> (
    None
):
    names = {"first.json", "continued.json", "dispatched.json", "autopilot.json", "redispatched.json"}
    assert {path.name for path in QUEUE} == names
    assert {path.name for path in QUEUE_V3} == names
    assert {path.name for path in QUEUE_V2} == {"first.json", "continued.json", "dispatched.json"}
    assert {path.name for path in QUEUE_V1} == {"first.json", "continued.json"}
    for path in QUEUE:  # the local reads' patch is asked at the first read of runs, if any
        reads = ["dispatched.json", "autopilot.json", "redispatched.json"]
        local = [PATCH_LOCAL_READS] if path.name in reads else []
        assert _patches(path) == [PATCH_TRACK_RUNS, PATCH_AUTOPILOT, PATCH_ITEM_STATUS, *local], path
    for path in QUEUE_V3:
        assert _patches(path) == [PATCH_TRACK_RUNS, PATCH_AUTOPILOT], path
    for path in QUEUE_V2:
        assert _patches(path) == [PATCH_TRACK_RUNS], path
    for path in QUEUE_V1:
        assert _patches(path) == [], path


def test_the_dispatch_history_starts_the_run_as_a_child_and_reads_its_progress_until_it_is_judged() -> None:
    events = _events("queue/dispatched.json")
    kinds = [event["eventType"] for event in events]
    assert _accepted_updates("queue/dispatched.json") == ["add", "approve", "dispatch", "done"]
    assert kinds.count("EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED") == 1
    started = next(
        e for e in events if e["eventType"] == "EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED"
    )
    attributes = started["startChildWorkflowExecutionInitiatedEventAttributes"]
    assert attributes["workflowType"]["name"] == "SpecialistRun"  # type: ignore[index]
    assert attributes["parentClosePolicy"] == "PARENT_CLOSE_POLICY_ABANDON"  # type: ignore[index]
    # The reads are local activities (patch queue-reads-runs-locally): recorded as markers.
    reads = [
        e
        for e in events
        if e["eventType"] == "EVENT_TYPE_MARKER_RECORDED"
        and e["markerRecordedEventAttributes"]["markerName"] == "core_local_activity"  # type: ignore[index]
    ]
    assert not any(
        e["eventType"] == "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED"
        and e["activityTaskScheduledEventAttributes"]["activityType"]["name"] == "read_run_progress"  # type: ignore[index]
        for e in events
    )
    # Each read follows a poll timer or the run's own run_progressed signal.
    told = [
        e
        for e in events
        if e["eventType"] == "EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED"
        and e["workflowExecutionSignaledEventAttributes"]["signalName"] == "run_progressed"  # type: ignore[index]
    ]
    assert told and reads and kinds.count("EVENT_TYPE_TIMER_FIRED") + len(told) >= len(reads)
    # The run starts showing its item as active and is told when the item reaches human-review.
    indexed = attributes["searchAttributes"]["indexedFields"]  # type: ignore[index]
    assert base64.b64decode(indexed["QueueItemStatus"]["data"]) == b'"active"'
    summary = json.loads(base64.b64decode(started["userMetadata"]["summary"]["data"]))  # type: ignore[index]
    assert summary.startswith("ORD\\-1 · ") and summary.endswith(" · read\\_only")  # what the UI lists
    [told] = [
        e["signalExternalWorkflowExecutionInitiatedEventAttributes"]
        for e in events
        if e["eventType"] == "EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED"
    ]
    assert told["signalName"] == "queue_item_status"  # type: ignore[index]
    [payload] = told["input"]["payloads"]  # type: ignore[index]
    assert json.loads(base64.b64decode(payload["data"]))["status"] == "human-review"


def test_the_autopilot_history_fills_the_one_slot_twice_under_the_grant_and_never_with_high_risk() -> None:
    events = _events("queue/autopilot.json")
    accepted = _accepted_updates("queue/autopilot.json")
    assert accepted == [
        "capacity",
        "add",
        "add",
        "add",
        "approve",
        "approve",
        "approve",
        "autopilot",
        "autopilot",
        "done",
    ]
    starts = [
        e["startChildWorkflowExecutionInitiatedEventAttributes"]
        for e in events
        if e["eventType"] == "EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED"
    ]
    assert len(starts) == 2  # the high-risk item is never started by the queue
    runs = [_payload(start["input"]["payloads"][0]) for start in starts]  # type: ignore[index]
    assert [run["queue_grant"]["item_key"] for run in runs] == ["ORD-1", "ORD-2"]
    assert {(run["created_by"], run["proof"], run["queue_grant"]["granted_by"]) for run in runs} == {
        ("alice", None, "alice")
    }


def test_the_redispatch_history_signals_each_failed_run_its_verdict_before_starting_the_next() -> None:
    events = _events("queue/redispatched.json")
    kinds = [event["eventType"] for event in events]
    starts = kinds.count("EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED")
    signals = [
        e["signalExternalWorkflowExecutionInitiatedEventAttributes"]
        for e in events
        if e["eventType"] == "EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED"
    ]
    verdicts = [signal for signal in signals if signal["signalName"] == "queue_verdict"]  # type: ignore[index]
    told = [signal for signal in signals if signal["signalName"] == "queue_item_status"]  # type: ignore[index]
    assert len(verdicts) + len(told) == len(signals)
    assert starts >= 2 and len(verdicts) == starts - 1
    rounds = [_payload(signal["input"]["payloads"][0])["round"] for signal in verdicts]  # type: ignore[index]
    # A FAILed run's item is re-dispatched in the same task (so it is never told ai-review); the
    # last run is told that its item was handed to a person.
    statuses = [_payload(signal["input"]["payloads"][0])["status"] for signal in told]  # type: ignore[index]
    assert statuses == ["blocked"]
    assert rounds == list(range(1, starts))
    assert _accepted_updates("queue/redispatched.json") == ["autopilot", "add", "approve"]


def test_the_queue_histories_hold_only_accepted_moves_and_continue_as_new_with_every_item() -> None:
    first = _events("queue/first.json")
    # The approval of the thin proposal its validator refused is not in history: the first approve
    # accepted comes after the update that completed the proposal.
    accepted = _accepted_updates("queue/first.json")
    assert accepted[:3] == ["add", "update", "approve"]
    assert {"reject", "capacity", "autopilot"} <= set(accepted)
    started = first[0]["workflowExecutionStartedEventAttributes"]
    carried_in = _payload(started["input"]["payloads"][0])  # type: ignore[index]
    last = first[-1]
    assert last["eventType"] == "EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW"
    carried = _payload(last["workflowExecutionContinuedAsNewEventAttributes"]["input"]["payloads"][0])  # type: ignore[index]
    statuses = {"proposal", "approved", "active", "ai-review", "human-review", "done", "rejected", "failed"}
    assert {item["status"] for item in carried["items"]} == statuses | {"blocked"}
    assert carried["runs"] == carried_in["runs"] + 1
    assert [item["key"] for item in carried["items"]][: len(carried_in["items"])] == [
        item["key"] for item in carried_in["items"]
    ]
    assert carried["settings"]["slots"] == 4
    assert [refusal["code"] for refusal in carried["refusals"]] == ["proof_missing"]
    continued = _events("queue/continued.json")
    assert (
        _payload(continued[0]["workflowExecutionStartedEventAttributes"]["input"]["payloads"][0]) == carried
    )  # type: ignore[index]
    assert _accepted_updates("queue/continued.json") == ["add", "approve", "park", "release", "reopen"]


def test_the_probe_history_records_its_patch_a_refused_and_an_accepted_approval_and_the_probe_activity() -> (
    None
):
    run = HISTORIES / "probes" / "probe_approved_and_run.json"
    assert _names(PROBES) == {"probe_approved_and_run"}
    assert _patches(run) == [PATCH_RUN_V5, PATCH_PROBE_REQUESTS]
    assert not {PATCH_PROBE_REQUESTS} & {
        patch for path in ALL if path not in PROBES for patch in _patches(path)
    }
    events = json.loads(run.read_text(encoding="utf-8"))["events"]
    updates = [
        e["workflowExecutionUpdateAcceptedEventAttributes"]["acceptedRequest"]["input"]["name"]
        for e in events
        if e["eventType"] == "EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED"
    ]
    assert updates == ["approve_probe", "approve_probe", "decide"]  # a stale digest, then the probe's
    scheduled = [
        e["activityTaskScheduledEventAttributes"]["activityType"]["name"]
        for e in events
        if e["eventType"] == "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED"
    ]
    assert scheduled.count("run_probe") == 1


def test_the_case_sweep_histories_route_once_and_the_run_carries_the_schedules_grant() -> None:
    # python -m tests.histories.record_case_sweep: two sweeps of one validation case, and its run.
    assert [path.name for path in SCHEDULES] == [
        "case_sweep.json",
        "case_sweep_again.json",
        "case_sweep_run.json",
    ]
    assert PATCH_CASE_SWEEP_GRANT in _patches(HISTORIES / "schedules" / "case_sweep_run.json")
    for name in ("case_sweep", "case_sweep_again"):
        kinds = [
            e["activityTaskScheduledEventAttributes"]["activityType"]["name"]  # type: ignore[index]
            for e in _events(f"schedules/{name}.json")
            if "activityTaskScheduledEventAttributes" in e
        ]
        assert kinds[:2] == ["authorize_action", "list_sweep_cases"] and "attach_case_notes" in kinds
