"""A workflow module that breaks the rule "no I/O libraries in workflow code": it imports SQLAlchemy
at module level, outside ``workflow.unsafe.imports_passed_through()``. A worker built with
:func:`worker.sandbox_runner` must refuse it at construction."""

from __future__ import annotations

import sqlalchemy  # the violation under test
from temporalio import workflow


@workflow.defn(name="UnsafeImportWorkflow")
class UnsafeImportWorkflow:
    @workflow.run
    async def run(self) -> str:
        return sqlalchemy.__version__
