"""Worker versioning (docs/architecture.md "Safe upgrades"): a worker started with
``SPECIALISTS_DEPLOYMENT_NAME`` and ``SPECIALISTS_BUILD_ID`` polls as that version of the worker
deployment; the server sends new workflows to the deployment's current version, and a run stays on
the version it started on (pinned) while singletons move to the current one (auto-upgrade).

Both settings or neither: without them a worker is unversioned, as in development and the demo.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from typing import Final

from google.protobuf.field_mask_pb2 import FieldMask
from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import VersionDrainageStatus, WorkerDeploymentVersionStatus
from temporalio.api.workflow.v1 import VersioningOverride, WorkflowExecutionOptions
from temporalio.api.workflowservice.v1 import (
    DescribeWorkerDeploymentRequest,
    SetWorkerDeploymentCurrentVersionRequest,
    SetWorkerDeploymentRampingVersionRequest,
    UpdateWorkflowExecutionOptionsRequest,
)
from temporalio.client import Client
from temporalio.common import WorkerDeploymentVersion
from temporalio.service import RPCError, RPCStatusCode

from contracts.deployment_versions import (
    DeploymentVersionView,
    DeploymentView,
    Drainage,
    VersionStatus,
    check_build_id,
    check_deployment_name,
)
from contracts.errors import InvalidInput, NotFound, Refused, ServiceUnavailable

ENV_DEPLOYMENT_NAME: Final = "SPECIALISTS_DEPLOYMENT_NAME"
ENV_BUILD_ID: Final = "SPECIALISTS_BUILD_ID"

_STATUS: Final[dict[int, VersionStatus]] = {
    WorkerDeploymentVersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_CREATED: "created",
    WorkerDeploymentVersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_CURRENT: "current",
    WorkerDeploymentVersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_RAMPING: "ramping",
    WorkerDeploymentVersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_DRAINING: "draining",
    WorkerDeploymentVersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_DRAINED: "drained",
    WorkerDeploymentVersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_INACTIVE: "inactive",
}
_DRAINAGE: Final[dict[int, Drainage]] = {
    VersionDrainageStatus.VERSION_DRAINAGE_STATUS_DRAINING: "draining",
    VersionDrainageStatus.VERSION_DRAINAGE_STATUS_DRAINED: "drained",
}


def deployment_version(environ: Mapping[str, str] = os.environ) -> WorkerDeploymentVersion | None:
    """The version this worker polls as, or ``None`` (unversioned) when neither setting is given."""
    name = environ.get(ENV_DEPLOYMENT_NAME, "").strip()
    build_id = environ.get(ENV_BUILD_ID, "").strip()
    if not name and not build_id:
        return None
    if not name or not build_id:
        missing, given = (
            (ENV_DEPLOYMENT_NAME, ENV_BUILD_ID) if not name else (ENV_BUILD_ID, ENV_DEPLOYMENT_NAME)
        )
        raise InvalidInput("invalid_setting", f"{given} is set but {missing} is not: set both or neither")
    return WorkerDeploymentVersion(
        deployment_name=check_deployment_name(name, variable=ENV_DEPLOYMENT_NAME),
        build_id=check_build_id(build_id, variable=ENV_BUILD_ID),
    )


def deployment_name(environ: Mapping[str, str] = os.environ) -> str:
    """``SPECIALISTS_DEPLOYMENT_NAME`` for the operator commands (required there)."""
    name = environ.get(ENV_DEPLOYMENT_NAME, "").strip()
    if not name:
        raise InvalidInput(
            "deployment_not_configured",
            f"{ENV_DEPLOYMENT_NAME} is not set: the workers of this deployment are not versioned",
        )
    return check_deployment_name(name, variable=ENV_DEPLOYMENT_NAME)


async def describe(client: Client, name: str) -> DeploymentView:
    """The deployment's routing and versions (``exists`` false before any versioned worker polled)."""
    try:
        answer = await client.workflow_service.describe_worker_deployment(
            DescribeWorkerDeploymentRequest(namespace=client.namespace, deployment_name=name)
        )
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            return DeploymentView(
                deployment=name,
                exists=False,
                current_build_id=None,
                ramping_build_id=None,
                ramping_percentage=0.0,
                versions=[],
            )
        raise _unavailable(error) from None
    info = answer.worker_deployment_info
    routing = info.routing_config
    return DeploymentView(
        deployment=name,
        exists=True,
        current_build_id=routing.current_deployment_version.build_id or None,
        ramping_build_id=routing.ramping_deployment_version.build_id or None,
        ramping_percentage=routing.ramping_version_percentage,
        versions=[
            DeploymentVersionView(
                build_id=summary.deployment_version.build_id,
                status=_STATUS.get(summary.status, "unspecified"),
                drainage=_DRAINAGE.get(summary.drainage_status, "unspecified"),
            )
            for summary in info.version_summaries
        ],
    )


_MISSING_QUEUES = "missing active task queues"
"""The server's refusal of a version that does not (yet) poll every task queue the current one does."""
_PROMOTE_ATTEMPTS = 40
_PROMOTE_WAIT_S = 0.25


async def promote(client: Client, name: str, build_id: str, *, identity: str) -> DeploymentView:
    """Make ``build_id`` the current version: new workflows start there, auto-upgrade workflows move
    there; pinned runs stay on the version they started on. Refused (``version_not_polling``) for a
    version no worker has polled as: new work would wait for a worker that may never come. A version
    that does not yet poll every task queue of the current one is waited for up to 10 s (its workers
    may still be starting their pollers), then refused (``version_refused``) with the server's reason."""
    check_build_id(build_id, variable="BUILD_ID")
    await _known(client, name, build_id)
    request = SetWorkerDeploymentCurrentVersionRequest(
        namespace=client.namespace, deployment_name=name, build_id=build_id, identity=identity
    )
    for attempt in range(_PROMOTE_ATTEMPTS):
        try:
            await client.workflow_service.set_worker_deployment_current_version(request)
            break
        except RPCError as error:
            # A version whose workers have just started may not poll every task queue of the current
            # version yet (a worker's host queue starts after its main one): wait for it, briefly.
            if _MISSING_QUEUES not in error.message or attempt == _PROMOTE_ATTEMPTS - 1:
                raise _refused(error, name, build_id) from None
            await asyncio.sleep(_PROMOTE_WAIT_S)
    return await describe(client, name)


async def ramp(
    client: Client, name: str, build_id: str, percentage: float, *, identity: str
) -> DeploymentView:
    """Send ``percentage`` (0 < p < 100) of new workflows to ``build_id`` while the current version
    takes the rest — a gradual rollout before :func:`promote`."""
    check_build_id(build_id, variable="BUILD_ID")
    if not 0 < percentage < 100:
        raise InvalidInput(
            "invalid_percentage", f"--percent {percentage}: expected more than 0 and less than 100"
        )
    await _known(client, name, build_id)
    try:
        await client.workflow_service.set_worker_deployment_ramping_version(
            SetWorkerDeploymentRampingVersionRequest(
                namespace=client.namespace,
                deployment_name=name,
                build_id=build_id,
                percentage=percentage,
                identity=identity,
            )
        )
    except RPCError as error:
        raise _refused(error, name, build_id) from None
    return await describe(client, name)


_CONCURRENT_CHANGE: Final = (
    RPCStatusCode.FAILED_PRECONDITION,
    RPCStatusCode.ABORTED,
    RPCStatusCode.RESOURCE_EXHAUSTED,
)
"""How the server refuses a change to a deployment while another worker's change to it is under way."""


async def promote_if_first(
    client: Client, version: WorkerDeploymentVersion, *, identity: str, attempts: int = 50
) -> bool:
    """Make ``version`` current when its deployment has no current version yet (a deployment's first
    workers, which would otherwise get no work); later versions are promoted by an operator.
    Waits for the server to know the version (its first poll) for up to ``attempts`` × 0.2 s; several
    first workers starting together settle on one of them without any failing."""
    for _ in range(attempts):
        view = await describe(client, version.deployment_name)
        if view.current_build_id is not None:
            return False
        if any(known.build_id == version.build_id for known in view.versions):
            try:
                await client.workflow_service.set_worker_deployment_current_version(
                    SetWorkerDeploymentCurrentVersionRequest(
                        namespace=client.namespace,
                        deployment_name=version.deployment_name,
                        build_id=version.build_id,
                        identity=identity,
                    )
                )
            except RPCError as error:
                # Another first worker promoted meanwhile, or is promoting right now (the server
                # throttles concurrent changes to one deployment): read again.
                if error.status not in _CONCURRENT_CHANGE:
                    raise _unavailable(error) from None
            else:
                return True
        await asyncio.sleep(0.2)
    raise ServiceUnavailable(
        "version_not_registered",
        f"the server has not registered version {version.build_id!r} of deployment "
        f"{version.deployment_name!r} after this worker started polling",
    )


async def _known(client: Client, name: str, build_id: str) -> None:
    view = await describe(client, name)
    if not view.exists:
        raise NotFound("deployment_not_found", f"no worker has polled as a version of deployment {name!r}")
    if all(known.build_id != build_id for known in view.versions):
        known = ", ".join(sorted(version.build_id for version in view.versions)) or "none"
        raise NotFound(
            "version_not_polling",
            f"no worker has polled as version {build_id!r} of deployment {name!r} (known: {known}); "
            "start its workers first",
        )


def _refused(error: RPCError, name: str, build_id: str) -> Exception:
    if error.status in (RPCStatusCode.FAILED_PRECONDITION, RPCStatusCode.INVALID_ARGUMENT):
        return InvalidInput(
            "version_refused", f"deployment {name!r} refused version {build_id!r}: {error.message}"
        )
    return _unavailable(error)


def _unavailable(error: RPCError) -> ServiceUnavailable:
    return ServiceUnavailable(
        "temporal_unavailable", f"Temporal refused the deployment request: {error.message}"
    )


async def release(client: Client, name: str, build_id: str, *, identity: str) -> list[str]:
    """Let every open workflow pinned to ``build_id`` move to the current version at its next step
    (an auto-upgrade override), so that version's workers can be stopped before it drained — their
    code replays on the new version through ``workflow.patched()``. Returns the workflow ids moved.
    Refuses, moving nothing, the current version (``version_is_current``: its runs are where they would
    move to) and one the deployment does not know (``unknown_version``)."""
    check_build_id(build_id, variable="BUILD_ID")
    view = await describe(client, name)
    if view.current_build_id == build_id:
        raise Refused(
            "version_is_current",
            f"{build_id!r} is deployment {name!r}'s current version: its runs already take its code; "
            "release the version a promotion replaced",
        )
    if build_id not in {version.build_id for version in view.versions}:
        known = ", ".join(version.build_id for version in view.versions) or "none"
        raise NotFound(
            "unknown_version", f"deployment {name!r} has no version {build_id!r} (its versions: {known})"
        )
    query = (
        f"TemporalWorkerDeploymentVersion = '{name}:{build_id}' "
        "AND TemporalWorkflowVersioningBehavior = 'Pinned' AND ExecutionStatus = 'Running'"
    )
    moved: list[str] = []
    try:
        async for execution in client.list_workflows(query):
            await client.workflow_service.update_workflow_execution_options(
                UpdateWorkflowExecutionOptionsRequest(
                    namespace=client.namespace,
                    workflow_execution=WorkflowExecution(workflow_id=execution.id, run_id=execution.run_id),
                    workflow_execution_options=WorkflowExecutionOptions(
                        versioning_override=VersioningOverride(auto_upgrade=True)
                    ),
                    update_mask=FieldMask(paths=["versioning_override"]),
                    identity=identity,
                )
            )
            moved.append(execution.id)
    except RPCError as error:
        raise _unavailable(error) from None
    return moved
