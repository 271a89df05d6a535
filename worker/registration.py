"""Every workflow and activity this deployment runs, and the workers that run them.

The sandbox raises on any unintentional passthrough import, so a workflow module that imports an I/O
library fails at worker construction instead of misbehaving at run time.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import importlib.util
import os
import py_compile
import sys
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.client import Client
from temporalio.common import VersioningBehavior, WorkerDeploymentVersion
from temporalio.worker import Worker, WorkerDeploymentConfig
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from activities.authorization import AuthorizationActivities
from activities.case_sweep import CaseSweepActivities
from activities.ceilings import CeilingActivities, LeaseReleaser
from activities.config import ActivityConfig
from activities.context_packs import ContextPackActivities
from activities.execution import ExecutionActivities
from activities.intake_beyond import BeyondActivities
from activities.intake_scan import IntakeActivities
from activities.intake_sweep import IntakeSweepActivities
from activities.models import ModelActivities
from activities.probes import ProbeActivities
from activities.projection import ProjectionActivities
from activities.providers.base import ModelProvider
from activities.queue_archive import QueueArchiveActivities
from activities.queue_runs import QueueRunActivities
from activities.queue_spec import SpecActivities
from activities.research import ResearchActivities
from activities.research_coordination import CoordinationActivities
from activities.routing import RoutingActivities
from activities.shipping import ShippingActivities
from activities.store_access import SharedStore
from activities.worktree_prune import WorktreePruneActivities, worker_host
from contracts.worktree_prune import host_task_queue
from workflows.case_sweep import CaseSweepWorkflow
from workflows.intake_sweep import IntakeSweepWorkflow
from workflows.model_ceiling import ModelCeilingWorkflow
from workflows.model_check import ModelCheckWorkflow
from workflows.model_job import ModelJobWorkflow
from workflows.research_coordinator import ResearchCoordinatorWorkflow
from workflows.research_team import ResearchTeamWorkflow
from workflows.specialist_run import SpecialistRunWorkflow
from workflows.versioning import use_worker_versioning
from workflows.work_queue import WorkQueueWorkflow
from workflows.worktree_prune import WorktreePruneWorkflow

WORKFLOWS: Sequence[type] = (
    SpecialistRunWorkflow,
    ModelJobWorkflow,
    ModelCheckWorkflow,
    ModelCeilingWorkflow,
    WorktreePruneWorkflow,
    ResearchTeamWorkflow,
    ResearchCoordinatorWorkflow,
    WorkQueueWorkflow,
    CaseSweepWorkflow,
    IntakeSweepWorkflow,
)

# A worker killed without a graceful stop strands its sticky queue; the server waits this long before
# handing the workflow task to another worker (TOOLCHAIN.md: 10 s by default, about 1 s at this value).
STICKY_QUEUE_TIMEOUT = timedelta(seconds=1)
ACTIVITY_THREADS = 16


def compile_workflow_modules(workflows: Sequence[type]) -> None:
    """Write the bytecode cache of each workflow class's module, where the directory allows it.

    The sandbox imports a workflow's module afresh for every workflow it runs (that is its
    isolation); without a cached ``.pyc`` — ``PYTHONDONTWRITEBYTECODE`` is common on servers and
    in containers — each of those imports compiles the source again, a few milliseconds of CPU per
    workflow. ``py_compile`` writes the cache whatever that setting; a read-only install keeps the
    slower path.
    """
    for workflow_class in workflows:
        source = getattr(sys.modules.get(workflow_class.__module__), "__file__", None)
        if source is None or not source.endswith(".py"):
            continue
        with contextlib.suppress(OSError, py_compile.PyCompileError):
            cached = importlib.util.cache_from_source(source)
            if not os.path.exists(cached) or os.path.getmtime(cached) < os.path.getmtime(source):
                py_compile.compile(source, cfile=cached, doraise=True)


def sandbox_runner() -> SandboxedWorkflowRunner:
    """The workflow sandbox, set to raise on unintentional passthrough imports."""
    restrictions = SandboxRestrictions.default.with_import_notification_policy(
        workflow.SandboxImportNotificationPolicy.RAISE_ON_UNINTENTIONAL_PASSTHROUGH
    )
    return SandboxedWorkflowRunner(restrictions=restrictions)


def activities_for(
    config: ActivityConfig,
    providers: dict[str, ModelProvider] | None = None,
    store: SharedStore | None = None,
    releaser: LeaseReleaser | None = None,
) -> list[Any]:
    """Every activity, bound to ``config`` (``providers`` adds or replaces model providers; ``store``
    shares an already created store handle; ``releaser`` lets ``call_model`` give its lease back)."""
    store = store or SharedStore(config.database_url, config.trust_anchor)
    routing = RoutingActivities(config, store)
    models = ModelActivities(config, providers, store, releaser=releaser)
    authorization = AuthorizationActivities(config, store)
    projection = ProjectionActivities(config, store)
    ceilings = CeilingActivities(store, config.class_ceilings)
    packs = ContextPackActivities(config, store)
    execution = ExecutionActivities(config, store)
    prune = WorktreePruneActivities(config, store)
    research = ResearchActivities(config, store)
    coordination = CoordinationActivities(config)
    archive = QueueArchiveActivities(store)
    return [
        routing.capture_contract,
        models.call_model,
        models.check_model,
        authorization.authorize_action,
        projection.project_run,
        ceilings.request_model_lease,
        packs.build_context_pack,
        execution.execute_worktree_attempt,
        ProbeActivities(config, store).run_probe,
        prune.check_prune_target,
        research.capture_team,
        research.check_team_inputs,
        research.store_job_output,
        coordination.request_team_admission,
        coordination.request_stage_advance,
        coordination.find_closed_teams,
        QueueRunActivities().read_run_progress,
        QueueRunActivities().check_queue_verdict,
        ShippingActivities(store).ship_item,
        ShippingActivities(store).read_base_heads,
        IntakeActivities(store).scan_repository,
        SpecActivities(config, store).capture_spec,
        BeyondActivities(config, store).prepare_beyond_scan,
        BeyondActivities(config, store).check_beyond_quotes,
        CaseSweepActivities(store).list_sweep_cases,
        CaseSweepActivities(store).attach_case_notes,
        IntakeSweepActivities(store).list_intake_repositories,
        IntakeSweepActivities(store).request_intake_scan,
        IntakeSweepActivities(store).check_intake_sweep,
        archive.archive_queue_items,
        archive.find_archived_queue_items,
    ]


def host_activities(config: ActivityConfig, store: SharedStore | None = None) -> list[Any]:
    """The activities that must run on the host whose disk they act on (``prune_worktrees``)."""
    shared = store or SharedStore(config.database_url, config.trust_anchor)
    return [WorktreePruneActivities(config, shared).prune_worktrees]


def build_worker(
    client: Client,
    *,
    task_queue: str,
    config: ActivityConfig,
    providers: dict[str, ModelProvider] | None = None,
    executor: concurrent.futures.Executor | None = None,
    store: SharedStore | None = None,
    version: WorkerDeploymentVersion | None = None,
) -> Worker:
    """A worker for ``task_queue`` with every workflow and activity registered; with ``version``, it
    polls as that version of its worker deployment (each workflow class declares whether it stays
    on the version it started on or moves to the current one: docs/architecture.md "Safe upgrades").

    Built inside the event loop that will run it: ``call_model`` gives its ceiling lease back through
    ``client`` on that loop (outside one, jobs give leases back themselves).
    """
    try:
        releaser: LeaseReleaser | None = LeaseReleaser(client, asyncio.get_running_loop())
    except RuntimeError:
        releaser = None
    compile_workflow_modules(WORKFLOWS)
    return Worker(
        client,
        task_queue=task_queue,
        workflows=list(WORKFLOWS),
        activities=activities_for(config, providers, store, releaser),
        activity_executor=executor or concurrent.futures.ThreadPoolExecutor(max_workers=ACTIVITY_THREADS),
        # No more activities than threads: a sync activity queued behind busy threads would miss its
        # heartbeat timeout and be run twice.
        max_concurrent_activities=ACTIVITY_THREADS,
        workflow_runner=sandbox_runner(),
        sticky_queue_schedule_to_start_timeout=STICKY_QUEUE_TIMEOUT,
        graceful_shutdown_timeout=timedelta(seconds=5),
        deployment_config=deployment_config(version),
    )


def deployment_config(version: WorkerDeploymentVersion | None) -> WorkerDeploymentConfig | None:
    """Versioning on for ``version``: the workflows declare their behaviours from then on (a class
    that declares none is pinned)."""
    if version is None:
        return None
    use_worker_versioning()
    return WorkerDeploymentConfig(
        version=version, use_worker_versioning=True, default_versioning_behavior=VersioningBehavior.PINNED
    )


def build_host_worker(
    client: Client,
    *,
    task_queue: str,
    config: ActivityConfig,
    store: SharedStore | None = None,
    host: str | None = None,
    executor: concurrent.futures.Executor | None = None,
) -> Worker:
    """A worker for this host's own task queue, ``<task_queue>@<host>`` (``host``: this machine's
    name unless given), running only :func:`host_activities`.

    Worktrees live on the disk of the worker that made them; a ``WorktreePrune`` workflow schedules
    their removal on the task queue of the host recorded for the run, which only this host's
    workers poll.
    """
    return Worker(
        client,
        task_queue=host_task_queue(task_queue, host or worker_host()),
        activities=host_activities(config, store),
        activity_executor=executor or concurrent.futures.ThreadPoolExecutor(max_workers=2),
        max_concurrent_activities=2,
        graceful_shutdown_timeout=timedelta(seconds=5),
    )
