"""The worker: registers every workflow and activity (:mod:`worker.registration`) and runs them
against the deployment's Temporal server (:mod:`worker.process`, ``python -m worker``)."""

from worker.process import activity_config, main, run_worker
from worker.registration import (
    ACTIVITY_THREADS,
    STICKY_QUEUE_TIMEOUT,
    WORKFLOWS,
    activities_for,
    build_host_worker,
    build_worker,
    compile_workflow_modules,
    host_activities,
    sandbox_runner,
)

__all__ = [
    "ACTIVITY_THREADS",
    "STICKY_QUEUE_TIMEOUT",
    "WORKFLOWS",
    "activities_for",
    "activity_config",
    "build_host_worker",
    "build_worker",
    "compile_workflow_modules",
    "host_activities",
    "main",
    "run_worker",
    "sandbox_runner",
]
