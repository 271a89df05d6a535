"""``specialists schedules``: the deployment's Temporal Schedules (docs/architecture.md "Schedules").

``list`` (read-only); ``enable NAME [--interval 1d]``, ``pause NAME``, ``resume NAME`` and
``trigger NAME`` (protected: ``--actor ID`` with that actor's key in force). ``enable`` creates the
schedule (or replaces its spec and grant) with the actor's signature of ``schedule_enable`` on the
schedule id as its standing grant; the worker checks that signature before every sweep and on every
run a sweep starts (the case sweep) or on every scan it asks the goal queue for (the intake scan).
Names: ``case-sweep`` (the daily case analysis) and ``intake-scan`` (intake scans of every active
registered repository; off until enabled).

JSON: ``list`` prints ``{"schedules": [{"name", "schedule_id", "available", "exists", "paused",
"note", "interval_seconds", "granted_by", "input_problem", "policy_problem", "next_action_times",
"recent_actions"}]}``; the other commands print ``{"schedule": {...the same keys}, "action": "enabled |
paused | resumed | triggered"}`` (``enable`` adds ``replaced_grant_of``: the person whose standing grant
it replaced, ``null`` when none or the same person's). ``next_action_times`` is empty while a schedule
is paused (it starts nothing then); ``policy_problem`` says why the automation policy in force gives
the case sweep nothing to run (every case would be skipped), ``null`` when it may run and for the
other kinds. Exit codes: 2 an unknown name or interval, 3 a schedule not created yet
(``unknown_schedule``), 4 refused
(``schedule_unavailable``, identity refusals), 5 Temporal unreachable.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from control.commands.common import ActorOption, JsonFlag, actor_required, actor_signer, run_async

if TYPE_CHECKING:
    from temporalio.client import Client

    from contracts.schedules import ScheduleKind

app = typer.Typer(
    help="Temporal Schedules: the daily case analysis and the intake scan (list, enable, pause, "
    "resume, trigger).",
    no_args_is_help=True,
)
NameArgument = Annotated[str, typer.Argument(metavar="NAME", help="case-sweep | intake-scan")]


def _kind(name: str) -> ScheduleKind:
    from contracts.errors import InvalidInput
    from contracts.schedules import ScheduleKind

    try:
        return ScheduleKind(name)
    except ValueError:
        names = ", ".join(kind.value for kind in ScheduleKind)
        raise InvalidInput("unknown_schedule_name", f"no schedule named {name!r}: one of {names}") from None


def _policy_problem(kind: ScheduleKind) -> str | None:
    """Why the automation policy in force lets ``kind`` run nothing (the case sweep's runs need
    automatic read_only analysis), or ``None``."""
    from contracts.errors import OperatorError
    from contracts.schedules import ScheduleKind, case_sweep_policy_problem
    from control.commands.common import default_policy_record, open_store, with_store

    if kind is not ScheduleKind.CASE_SWEEP:
        return None
    try:
        store = open_store(create=False)
        record = (
            default_policy_record() if store is None else with_store(store, lambda held: held.get_policy())
        )
    except OperatorError as error:
        return f"{error.code}: {error.message}"
    problem = case_sweep_policy_problem(record.policy)
    return None if problem is None else f"{problem}; until then every case is skipped"


async def _describe(client: Client, kind: ScheduleKind, task_queue: str) -> dict[str, Any]:
    from temporalio.service import RPCError, RPCStatusCode

    from contracts.schedules import AVAILABLE_KINDS, schedule_id, sweep_input_type

    sid = schedule_id(kind, task_queue)
    entry: dict[str, Any] = {
        "name": kind.value,
        "schedule_id": sid,
        "available": kind in AVAILABLE_KINDS,
        "exists": False,
        "paused": None,
        "note": None,
        "interval_seconds": None,
        "granted_by": None,
        "input_problem": None,
        "policy_problem": _policy_problem(kind),
        "next_action_times": [],
        "recent_actions": [],
    }
    try:
        described = await client.get_schedule_handle(sid).describe()
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            return entry
        raise
    schedule = described.schedule
    intervals = schedule.spec.intervals
    entry.update(
        exists=True,
        paused=schedule.state.paused,
        note=schedule.state.note or None,
        interval_seconds=int(intervals[0].every.total_seconds()) if intervals else None,
        # A paused schedule starts nothing, whatever times its spec still computes.
        next_action_times=(
            [] if schedule.state.paused else [_time(at) for at in described.info.next_action_times[:3]]
        ),
        recent_actions=[
            {"scheduled_at": _time(action.scheduled_at), "workflow_id": action.action.workflow_id}
            for action in described.info.recent_actions[-5:]
            if hasattr(action.action, "workflow_id")
        ],
    )
    # Who granted it, read from the action's input as its own kind's model; an input that does not
    # read as one (a schedule written by hand, or by another version) is named, not guessed at.
    expected = sweep_input_type(kind)
    args = getattr(schedule.action, "args", None)
    if not args:
        entry["input_problem"] = f"the schedule's action has no input (expected {expected.__name__})"
        return entry
    from temporalio.contrib.pydantic import pydantic_data_converter

    payload = args[0]
    try:
        if not isinstance(payload, expected):
            [payload] = await pydantic_data_converter.decode([payload], [expected])
    except Exception as error:
        from pydantic import ValidationError

        from control.inputs import describe_validation_error

        reason = (
            describe_validation_error(error)
            if isinstance(error, ValidationError)
            else (str(error).splitlines() or [type(error).__name__])[0]
        )
        entry["input_problem"] = f"the schedule's input does not read as {expected.__name__}: {reason}"
        return entry
    entry["granted_by"] = payload.grant.granted_by
    return entry


def _time(value: Any) -> str:
    import datetime as dt

    return str(value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z"))


def _render(console: Any, entries: list[dict[str, Any]]) -> None:
    from control.output import safe_text, table

    rows = [
        [
            entry["name"],
            "yes" if entry["exists"] else ("no" if entry["available"] else "not in this version"),
            "-" if entry["paused"] is None else ("paused" if entry["paused"] else "active"),
            "-" if entry["interval_seconds"] is None else f"{entry['interval_seconds']} s",
            entry["granted_by"] or "-",
            "none while paused" if entry["paused"] else (entry["next_action_times"] or ["-"])[0],
        ]
        for entry in entries
    ]
    console.print(table("schedules", ["name", "created", "state", "every", "granted by", "next"], rows))
    for entry in entries:
        for problem in (entry["input_problem"], entry["policy_problem"]):
            if problem:
                console.print(safe_text(f"{entry['name']}: {problem}"))


def _said(entry: dict[str, Any], said: str) -> str:
    """``said``, then the schedule's policy problem on a line of its own when it has one."""
    return said if not entry["policy_problem"] else f"{said}\nwarning: {entry['policy_problem']}"


@app.command("list")
def list_command(as_json: JsonFlag = False) -> None:
    """List the schedules: whether each exists, is paused, how often it runs and who granted it."""
    from contracts.schedules import ScheduleKind
    from control.commands.common import client, task_queue
    from control.output import emit

    async def collect() -> list[dict[str, Any]]:
        temporal = await client()
        return [await _describe(temporal, kind, task_queue()) for kind in ScheduleKind]

    entries = run_async(collect())
    emit({"schedules": entries}, as_json, lambda console: _render(console, entries))


async def _require_exists(temporal: Client, kind: ScheduleKind, queue: str) -> dict[str, Any]:
    from contracts.errors import NotFound

    entry = await _describe(temporal, kind, queue)
    if not entry["exists"]:
        raise NotFound(
            "unknown_schedule",
            f"schedule {entry['schedule_id']} is not created: `specialists schedules enable {kind.value} "
            "--actor ID` creates it",
        )
    return entry


def _change(name: str, actor: str | None, action: str, as_json: bool) -> None:
    from control.commands.common import client, task_queue
    from control.output import emit, safe_text

    kind = _kind(name)
    actor = actor_required(actor, f"{action} a schedule")
    actor_signer(actor)

    async def apply() -> dict[str, Any]:
        temporal = await client()
        queue = task_queue()
        entry = await _require_exists(temporal, kind, queue)
        handle = temporal.get_schedule_handle(entry["schedule_id"])
        if action == "paused":
            await handle.pause(note=f"paused by {actor}")
        elif action == "resumed":
            await handle.unpause(note=f"resumed by {actor}")
        else:
            await handle.trigger()
        return await _describe(temporal, kind, queue)

    entry = run_async(apply())
    emit(
        {"schedule": entry, "action": action},
        as_json,
        lambda console: console.print(safe_text(_said(entry, f"{entry['schedule_id']} {action} by {actor}"))),
    )


@app.command("pause")
def pause_command(name: NameArgument, actor: ActorOption = None, as_json: JsonFlag = False) -> None:
    """Pause a schedule: it starts nothing until resumed (protected)."""
    _change(name, actor, "paused", as_json)


@app.command("resume")
def resume_command(name: NameArgument, actor: ActorOption = None, as_json: JsonFlag = False) -> None:
    """Resume a paused schedule (protected)."""
    _change(name, actor, "resumed", as_json)


@app.command("trigger")
def trigger_command(name: NameArgument, actor: ActorOption = None, as_json: JsonFlag = False) -> None:
    """Start one sweep now, under the schedule's overlap policy (protected)."""
    _change(name, actor, "triggered", as_json)


@app.command("enable")
def enable_command(
    name: NameArgument,
    interval: Annotated[
        str, typer.Option("--interval", help="How often: 1d (default), 6h, 30m, 90s (1m..30d).")
    ] = "1d",
    actor: ActorOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Create the schedule (or replace its interval and grant; a paused one stays paused) under your
    signed standing grant (protected). The daily case analysis runs each eligible case once per
    factual evidence; the intake scan asks the goal queue to scan each active registered repository
    (proposals only)."""
    from contracts.errors import InvalidInput, Refused
    from contracts.schedules import AVAILABLE_KINDS, parse_interval
    from control.commands.common import client, task_queue
    from control.output import emit, safe_text

    kind = _kind(name)
    try:
        every = parse_interval(interval)
    except ValueError as error:
        raise InvalidInput("invalid_interval", str(error)) from None
    actor = actor_required(actor, "enabling a schedule")
    if kind not in AVAILABLE_KINDS:
        raise Refused("schedule_unavailable", f"the {kind.value} schedule's workflow is not in this version")
    signer = actor_signer(actor)

    async def apply() -> tuple[str | None, dict[str, Any]]:
        from control.schedule_setup import enable_schedule

        temporal = await client()
        queue = task_queue()
        before = (await _describe(temporal, kind, queue))["granted_by"]
        await enable_schedule(temporal, kind, signer, queue, every)
        return before, await _describe(temporal, kind, queue)

    before, entry = run_async(apply())
    # Enabling keeps a paused schedule paused (its interval and grant are replaced): say so, and
    # whose standing grant this one replaced when it was another person's.
    replaced = before if before is not None and before != actor else None
    paused = f"; still paused: `specialists schedules resume {kind.value}` runs it" if entry["paused"] else ""
    instead = f"; it replaces {replaced}'s grant: its runs are now created by {actor}" if replaced else ""
    said = f"{entry['schedule_id']} enabled by {actor}: every {entry['interval_seconds']} s{paused}{instead}"
    emit(
        {"schedule": entry, "action": "enabled", "replaced_grant_of": replaced},
        as_json,
        lambda console: console.print(safe_text(_said(entry, said))),
    )
