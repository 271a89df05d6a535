"""What ``specialists status`` reports about the deployment beyond its configuration: the state
directory, whether Temporal answers (within 2 s) and which workers poll the task queue, the
database (its URL with credentials masked, its schema revision against the Alembic head) and how
many runs the projection shows active.

Each part is a report, never an error: an unreachable Temporal or database, or configuration this
process cannot verify (no trust anchor), is shown as such, so ``status`` is the command to run when
something does not answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from contracts.errors import OperatorError

if TYPE_CHECKING:
    from rich.console import Console

    from runtime.settings import Settings
    from store.schema_status import SchemaStatus

STATUS_TIMEOUT_SECONDS: Final = 2.0
"""How long ``status`` waits for Temporal to answer."""


async def temporal_status(settings: Settings) -> dict[str, Any]:
    """``{"address", "namespace", "tls", "client_certificate", "api_key_set", "profile",
    "config_file", "task_queue", "reachable", "error", "workers": {"count", "identities"}}``: the
    connection :func:`runtime.connection.load_connection` resolves (whether an API key is set, never
    the key); ``workers`` is ``null`` when Temporal is not reachable."""
    from control.temporal import task_queue_pollers
    from runtime.connection import Connection, load_connection
    from runtime.temporal import connect

    try:
        connection = load_connection(settings)
        error: str | None = None
    except OperatorError as invalid:  # reported, not raised: `status` is what to run when stuck
        connection = Connection(address=settings.temporal_address, namespace=settings.namespace)
        error = invalid.message
    report: dict[str, Any] = {
        **connection.describe(),
        "task_queue": settings.task_queue,
        "reachable": False,
        "error": error,
        "workers": None,
    }
    if error is not None:
        return report
    try:
        client = await connect(settings, timeout=STATUS_TIMEOUT_SECONDS)
        report["reachable"] = True
        pollers = [poller for poller in await task_queue_pollers(client, settings.task_queue) if poller.fresh]
    except OperatorError as unreachable:
        report["error"] = unreachable.message
        return report
    report["workers"] = {"count": len(pollers), "identities": [poller.identity for poller in pollers]}
    return report


def database_status(settings: Settings) -> tuple[dict[str, Any], SchemaStatus | None]:
    """``{"url", "reachable", "error", "schema": {"exists", "cannot_be_created", "current", "head",
    "migration_needed", "newer_than_this_version"}}`` (the URL with any password as ``***``;
    ``cannot_be_created`` says why no store can be made at a SQLite path that has none), and the
    schema status when the database answered."""
    from store.database import shown_database_url
    from store.schema_status import schema_status

    try:
        shown = shown_database_url(settings.database_url)
    except OperatorError:
        shown = "(not a database URL)"
    report: dict[str, Any] = {"url": shown, "reachable": False, "error": None, "schema": None}
    try:
        schema = schema_status(settings.database_url)
    except OperatorError as error:
        report["error"] = error.message
        return report, None
    report["reachable"] = True
    report["schema"] = {
        "exists": schema.exists,
        "cannot_be_created": None if schema.exists else sqlite_create_problem(settings.database_url),
        "current": schema.current,
        "head": schema.head,
        "migration_needed": schema.migration_needed,
        "newer_than_this_version": schema.exists and not schema.known,
    }
    return report, schema


def sqlite_create_problem(url: str) -> str | None:
    """Why the SQLite store at ``url`` could not be created by the first configuration change (a
    directory is where its file should be, or its directory could not be written:
    :func:`runtime.setting_checks.directory_problem`), or ``None`` when it could — or the URL is not a
    SQLite file. Reads the file system; creates nothing."""
    from pathlib import Path

    from runtime.setting_checks import directory_problem
    from store.database import parse_database_url
    from store.engine import is_memory_sqlite

    parsed = parse_database_url(url)
    if parsed.get_backend_name() != "sqlite" or is_memory_sqlite(parsed) or parsed.database is None:
        return None
    path = Path(parsed.database)
    if path.exists():
        return None if path.is_file() else f"{path} exists and is not a file"
    return directory_problem(path.parent)


def render_status(console: Console, data: dict[str, Any]) -> None:
    """``status`` for a person: the configuration (:func:`control.views.render_status`; unknown
    when it cannot be read, and why), then the deployment."""
    from control import views
    from control.output import safe_text, table

    views.render_status(console, data)
    if data["policy"] is None:
        console.print(safe_text(f"configuration unknown: {unread_configuration(data)}"))
    console.print(table("deployment", ["", ""], deployment_rows(data)))


def unread_configuration(data: dict[str, Any]) -> str:
    """Why ``status`` shows no configuration: the refusal of its read (no trust anchor here, a record
    that does not verify), else why the store cannot be read at all."""
    refused = data.get("configuration_error")
    if refused is not None:
        return f"not verified here ({refused['code']}): {refused['message']}"
    reason = data["database"]["error"] or "its schema is not this version's (see below)"
    return f"the store cannot be read: {reason}"


def _security(temporal: dict[str, Any]) -> str:
    parts = []
    if temporal.get("tls"):
        parts.append("TLS with a client certificate" if temporal.get("client_certificate") else "TLS")
    if temporal.get("api_key_set"):
        parts.append("API key set")
    if temporal.get("profile"):
        parts.append(f"profile {temporal['profile']} of {temporal['config_file']}")
    return "".join(f", {part}" for part in parts)


def deployment_rows(data: dict[str, Any]) -> list[list[str]]:
    """The rows ``status`` prints for the deployment (after the configuration's)."""
    temporal, database = data["temporal"], data["database"]
    rows = [["state directory", data["state_dir"]]]
    where = f"{temporal['address']} (namespace {temporal['namespace']}{_security(temporal)})"
    if temporal["reachable"]:
        rows.append(["temporal", f"{where}: reachable"])
        workers = temporal["workers"]
        queue = temporal["task_queue"]
        if workers["count"]:
            names = ", ".join(workers["identities"])
            rows.append(["workers", f"{workers['count']} polling task queue {queue!r}: {names}"])
        else:
            rows.append(
                ["workers", f"none polling task queue {queue!r}: start one with `specialists worker`"]
            )
    else:
        rows.append(["temporal", f"{where}: not reachable within 2 s ({temporal['error']})"])
    rows.append(["database", database["url"]])
    schema = database["schema"]
    if not database["reachable"]:
        rows.append(["schema", f"unknown: {database['error']}"])
    elif not schema["exists"] and schema.get("cannot_be_created"):
        rows.append(["schema", f"no store yet, and none can be created there: {schema['cannot_be_created']}"])
    elif not schema["exists"]:
        rows.append(
            ["schema", f"no store yet (created by the first configuration change; head {schema['head']})"]
        )
    elif schema["newer_than_this_version"]:
        rows.append(["schema", f"{schema['current']}: newer than this version knows (head {schema['head']})"])
    elif schema["migration_needed"]:
        rows.append(
            [
                "schema",
                f"{schema['current']}, head {schema['head']}: migration needed "
                "(the next configuration change upgrades it)",
            ]
        )
    else:
        rows.append(["schema", f"{schema['current']} (head, current)"])
    active = data["runs"]["active"]
    rows.append(["active runs", "unknown" if active is None else str(active)])
    problems = data["worker_settings"]
    if problems:
        refused = "; ".join(problem["message"] for problem in problems)
        rows.append(["worker settings", f"a worker started here would refuse them: {refused}"])
    else:
        rows.append(["worker settings", "valid (as a worker started here reads them)"])
    return rows
