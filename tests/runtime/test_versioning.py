"""Worker versioning: a deployment's first worker version becomes current by itself; a new version
promoted by an operator takes the new runs while a run already started finishes on the version it
started on, with both versions' worker processes polling one task queue of a real dev server."""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from temporalio.api.deployment.v1 import RoutingConfig, WorkerDeploymentInfo, WorkerDeploymentVersion
from temporalio.api.enums.v1 import EventType, VersioningBehavior
from temporalio.api.workflowservice.v1 import DescribeWorkerDeploymentResponse
from temporalio.client import Client
from temporalio.common import WorkerDeploymentVersion as Version
from temporalio.service import RPCError, RPCStatusCode

from contracts.errors import InvalidInput
from contracts.queue_messages import queue_workflow_id
from infra.devserver import DevServer
from runtime.versioning import (
    ENV_BUILD_ID,
    ENV_DEPLOYMENT_NAME,
    deployment_name,
    deployment_version,
    promote_if_first,
)
from tests.control.cli_harness import SLOW_QUERY, Cli, running_worker


def test_a_worker_is_unversioned_unless_both_settings_are_given() -> None:
    assert deployment_version({}) is None
    version = deployment_version({ENV_DEPLOYMENT_NAME: "specialists", ENV_BUILD_ID: "2026.12.1"})
    assert version is not None and (version.deployment_name, version.build_id) == ("specialists", "2026.12.1")
    with pytest.raises(InvalidInput, match=f"{ENV_BUILD_ID} is set but {ENV_DEPLOYMENT_NAME} is not"):
        deployment_version({ENV_BUILD_ID: "7"})
    with pytest.raises(InvalidInput, match=f"{ENV_DEPLOYMENT_NAME} is set but {ENV_BUILD_ID} is not"):
        deployment_version({ENV_DEPLOYMENT_NAME: "specialists"})


@pytest.mark.parametrize(
    ("name", "build_id", "variable"),
    [("has.dot", "1", ENV_DEPLOYMENT_NAME), ("-dash", "1", ENV_DEPLOYMENT_NAME), ("ok", "a b", ENV_BUILD_ID)],
)
def test_a_malformed_name_or_build_id_is_refused_naming_its_setting(
    name: str, build_id: str, variable: str
) -> None:
    with pytest.raises(InvalidInput, match=variable):
        deployment_version({ENV_DEPLOYMENT_NAME: name, ENV_BUILD_ID: build_id})


def test_the_operator_commands_need_the_deployment_name() -> None:
    with pytest.raises(InvalidInput, match=ENV_DEPLOYMENT_NAME) as refused:
        deployment_name({})
    assert refused.value.code == "deployment_not_configured"


class _RacingDeploymentService:
    """A deployment with no current version yet whose first promotion is refused the way the server
    refuses a change while another first worker's change is under way; that worker's promotion then
    shows in the next describe."""

    def __init__(self, refusal: RPCStatusCode) -> None:
        self.refusal = refusal
        self.current = ""
        self.promotions = 0

    async def describe_worker_deployment(self, request: object) -> DescribeWorkerDeploymentResponse:
        summary = WorkerDeploymentInfo.WorkerDeploymentVersionSummary(
            deployment_version=WorkerDeploymentVersion(deployment_name="specialists", build_id="v1")
        )
        routing = RoutingConfig(
            current_deployment_version=WorkerDeploymentVersion(
                deployment_name="specialists", build_id=self.current
            )
        )
        return DescribeWorkerDeploymentResponse(
            worker_deployment_info=WorkerDeploymentInfo(
                name="specialists", version_summaries=[summary], routing_config=routing
            )
        )

    async def set_worker_deployment_current_version(self, request: object) -> None:
        self.promotions += 1
        self.current = "v1"  # the other first worker's promotion
        raise RPCError(
            "too many requests issued to Worker Deployment 'specialists'. Please try again later",
            self.refusal,
            b"",
        )


@pytest.mark.parametrize(
    "refusal",
    [RPCStatusCode.RESOURCE_EXHAUSTED, RPCStatusCode.FAILED_PRECONDITION, RPCStatusCode.ABORTED],
)
def test_first_workers_starting_together_settle_on_one_current_version_without_failing(
    refusal: RPCStatusCode,
) -> None:
    service = _RacingDeploymentService(refusal)
    client: Any = SimpleNamespace(namespace="default", workflow_service=service)
    promoted = asyncio.run(
        promote_if_first(client, Version(deployment_name="specialists", build_id="v1"), identity="w2")
    )
    assert (promoted, service.promotions, service.current) == (False, 1, "v1")


def _task_build_ids(address: str, workflow_id: str) -> tuple[list[str], int]:
    """The build id of the worker that completed each workflow task of ``workflow_id``, and the
    workflow's versioning behaviour."""

    async def fetch() -> tuple[list[str], int]:
        client = await Client.connect(address)
        handle = client.get_workflow_handle(workflow_id)
        history = await handle.fetch_history()
        description = await handle.describe()
        build_ids = [
            event.workflow_task_completed_event_attributes.deployment_version.build_id
            for event in history.events
            if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED
        ]
        return build_ids, description.raw_description.workflow_execution_info.versioning_info.behavior

    return asyncio.run(fetch())


def _queue_add(cli: Cli, title: str) -> None:
    item = json.dumps({"title": title})
    assert cli.call("queue", "add", "--input-json", item, "--actor", "alice", "--json").exit_code == 0


def _awaiting_decision(cli: Cli) -> str:
    run = cli.run(
        "create", f"--input-json=@{SLOW_QUERY}", "--tier", "read_only", "--enqueue", "--actor", "alice",
        "--wait", "--json",
    ).ok()  # fmt: skip
    assert run["status"] == "awaiting_decision"
    return str(run["run_id"])


def test_a_promoted_version_takes_new_runs_while_a_started_run_finishes_on_its_own(
    temporal_dev_server: DevServer, tmp_path: Path
) -> None:
    deployment = f"specialists-{uuid.uuid4().hex[:12]}"
    cli = Cli.isolated(
        tmp_path,
        SPECIALISTS_TEMPORAL_ADDRESS=temporal_dev_server.address,
        SPECIALISTS_TASK_QUEUE=f"versions-{uuid.uuid4().hex}",
        SPECIALISTS_DEPLOYMENT_NAME=deployment,
    )
    assert cli.call("actors", "register", "alice", "--name", "Alice").exit_code == 0
    assert cli.call("models", "select", "--primary", "replay:demo", "--actor", "alice").exit_code == 0
    assert cli.call("versions", "show", "--json").ok()["exists"] is False

    with running_worker(dict(cli.env, SPECIALISTS_BUILD_ID="v1"), tmp_path / "worker-v1.log"):
        shown = cli.call("versions", "show", "--json").ok()
        assert shown["current_build_id"] == "v1", "the deployment's first version made itself current"
        first = _awaiting_decision(cli)
        _queue_add(cli, "before the upgrade")  # the goal queue starts on v1

        refused = cli.call("versions", "promote", "v2", "--actor", "alice", "--json")
        assert refused.exit_code == 3 and refused.json()["error"]["code"] == "version_not_polling"

        with running_worker(dict(cli.env, SPECIALISTS_BUILD_ID="v2"), tmp_path / "worker-v2.log"):
            assert cli.call("versions", "show", "--json").ok()["current_build_id"] == "v1", (
                "a later version waits to be promoted"
            )
            promoted = cli.call("versions", "promote", "v2", "--actor", "alice", "--json").ok()
            assert promoted["current_build_id"] == "v2"
            cli.call("versions", "release", "v2", "--actor", "alice", "--json").error(4, "version_is_current")
            cli.call("versions", "release", "v9", "--actor", "alice", "--json").error(3, "unknown_version")
            assert {version["build_id"] for version in promoted["versions"]} == {"v1", "v2"}

            second = _awaiting_decision(cli)
            _queue_add(cli, "after the upgrade")
            for run_id in (first, second):
                assert (
                    cli.run("decide", run_id, "--actor", "alice", "--accept", "--json").ok()["status"]
                    == "accepted"
                )

    first_builds, first_behavior = _task_build_ids(temporal_dev_server.address, first)
    second_builds, second_behavior = _task_build_ids(temporal_dev_server.address, second)
    assert first_builds and set(first_builds) == {"v1"}, "the first run finished on the version it started on"
    assert second_builds and set(second_builds) == {"v2"}
    assert first_behavior == second_behavior == VersioningBehavior.VERSIONING_BEHAVIOR_PINNED
    queue_builds, queue_behavior = _task_build_ids(
        temporal_dev_server.address, queue_workflow_id(cli.env["SPECIALISTS_TASK_QUEUE"])
    )
    assert queue_builds[0] == "v1" and queue_builds[-1] == "v2", "the goal queue moved to the current version"
    assert queue_behavior == VersioningBehavior.VERSIONING_BEHAVIOR_AUTO_UPGRADE


def test_a_released_run_moves_to_the_current_version_and_finishes_after_its_workers_stop(
    temporal_dev_server: DevServer, tmp_path: Path
) -> None:
    cli = Cli.isolated(
        tmp_path,
        SPECIALISTS_TEMPORAL_ADDRESS=temporal_dev_server.address,
        SPECIALISTS_TASK_QUEUE=f"versions-{uuid.uuid4().hex}",
        SPECIALISTS_DEPLOYMENT_NAME=f"specialists-{uuid.uuid4().hex[:12]}",
    )
    assert cli.call("actors", "register", "alice", "--name", "Alice").exit_code == 0
    assert cli.call("models", "select", "--primary", "replay:demo", "--actor", "alice").exit_code == 0
    with contextlib.ExitStack() as old:
        old.enter_context(
            running_worker(dict(cli.env, SPECIALISTS_BUILD_ID="v1"), tmp_path / "worker-v1.log")
        )
        run_id = _awaiting_decision(cli)  # v1, the first version, is current
        with running_worker(dict(cli.env, SPECIALISTS_BUILD_ID="v2"), tmp_path / "worker-v2.log"):
            promoted = cli.call("versions", "promote", "v2", "--actor", "alice", "--json").ok()
            assert promoted["current_build_id"] == "v2"
            cli.call("versions", "release", "v2", "--actor", "alice", "--json").error(4, "version_is_current")
            cli.call("versions", "release", "v9", "--actor", "alice", "--json").error(3, "unknown_version")
            released = cli.call("versions", "release", "v1", "--actor", "alice", "--json").ok()
            assert released["released"] == [run_id]
            old.close()  # v1's workers stop; the run carries on on v2
            decided = cli.run("decide", run_id, "--actor", "alice", "--accept", "--json").ok()
            assert decided["status"] == "accepted"
    build_ids, _ = _task_build_ids(temporal_dev_server.address, run_id)
    assert build_ids[0] == "v1" and build_ids[-1] == "v2"
