"""``specialists research``: research cases and their evidence (DESIGN.md "Research team").

Commands: ``case-create`` and ``evidence-add`` (read a JSON input file), ``evidence-deactivate``
(all three protected: they need the deployment's action token, like every configuration change),
``case-show`` and ``cases`` (read-only).

An input file is parsed strictly (:class:`contracts.research.CaseInput`,
:class:`contracts.research.EvidenceAddInput`: unknown keys are refused). An evidence record gives its
text inline (``content``) or names a file (``path``, relative to the input file's directory) that must
be a regular file of at most :data:`contracts.research.MAX_EVIDENCE_CONTENT_BYTES` of UTF-8; its size is
checked before it is read. Every record is read and checked before anything is written, so one bad
record writes nothing (exit 2).

JSON shapes (``--json``): a case is ``{"case_id", "subject", "created_by", "created_at", "evidence":
[{"evidence_id", "kind", "factual", "source_ref", "sha256", "active", "size_bytes", "added_by",
"added_at"}], "evidence_digest"}`` (``evidence_digest`` over the active records; ``case-show
--content`` adds each record's ``"content"``); ``cases`` prints ``{"cases": [{"case_id", "kind",
"identifier", "title", "evidence_active", "evidence_total", "created_at"}]}``. Evidence content is shown
only with ``--content``. Everything shown but the labels is untrusted text: the human view prints it
only as :func:`control.output.table` cells or through :func:`control.output.safe_text`.

Heavy modules are imported inside the commands (see :mod:`control.cli`); annotations are evaluated at
import, as Typer needs (no ``from __future__ import annotations``).
"""

import json
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Final, TypeVar

import typer

from contracts.errors import InvalidInput

if TYPE_CHECKING:
    from rich.console import Console

    from contracts.research import CaseInput, EvidenceAddInput, EvidenceInput, ResearchCase

    InputT = TypeVar("InputT", CaseInput, EvidenceAddInput)

MAX_INPUT_FILE_BYTES: Final = 16 * 1024 * 1024
"""Largest input file: room for 100 records of 48 KiB inline, JSON-escaped."""

research_app = typer.Typer(
    help=(
        "Research cases and their evidence (create, show, add, deactivate, list), and research teams "
        "over them (start, list, show, results, adjudicate, cancel, coordinator)."
    ),
    no_args_is_help=True,
)

JsonFlag = Annotated[bool, typer.Option("--json", help="Print exactly one JSON object on stdout.")]
ActorOption = Annotated[
    str | None, typer.Option("--actor", help="Id of the registered human taking this action.")
]
InputOption = Annotated[
    Path,
    typer.Option(
        "--input",
        help='JSON file: {"evidence": [{"kind", "content" | "path", "source_ref"}]} (a path is read '
        "relative to this file's directory).",
    ),
]
CaseArgument = Annotated[str, typer.Argument(metavar="ID", help="Research case id (RSC-…).")]


# ------------------------------------------------------------------------------------------- commands


@research_app.command("case-create")
def case_create_command(
    input_file: InputOption, actor: ActorOption = None, as_json: JsonFlag = False
) -> None:
    """Create a research case from a JSON file: {"subject": {"kind", "identifier", "title"},
    "evidence": [...]} (protected)."""
    from contracts.research import CaseInput

    actor = _actor_required(actor, "creating a research case")
    case_input = read_input(input_file, CaseInput, what="case input", code="invalid_case_input")
    with _configuration_store() as store:
        case = store.create_case(case_input, actor)
    _emit_case(case, as_json, content=False)


@research_app.command("case-show")
def case_show_command(
    case_id: CaseArgument,
    content: Annotated[bool, typer.Option("--content", help="Also show each record's content.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Show a research case and its evidence records (content only with --content)."""
    from contracts.errors import NotFound
    from store.research import check_case_id

    check_case_id(case_id)
    store = _read_store()
    if store is None:
        raise NotFound("unknown_case", f"no research case {case_id}")
    with store:
        case = store.get_case(case_id)
    _emit_case(case, as_json, content=content)


@research_app.command("evidence-add")
def evidence_add_command(
    case_id: CaseArgument, input_file: InputOption, actor: ActorOption = None, as_json: JsonFlag = False
) -> None:
    """Add evidence records to a case from a JSON file: {"evidence": [...]} (protected; all or none)."""
    from contracts.research import EvidenceAddInput
    from store.research import check_case_id

    actor = _actor_required(actor, "adding evidence")
    check_case_id(case_id)
    added = read_input(input_file, EvidenceAddInput, what="evidence input", code="invalid_evidence_input")
    with _configuration_store() as store:
        store.add_evidence(case_id, list(added.evidence), actor)
        case = store.get_case(case_id)
    _emit_case(case, as_json, content=False)


@research_app.command("evidence-deactivate")
def evidence_deactivate_command(
    case_id: CaseArgument,
    evidence_id: Annotated[str, typer.Argument(metavar="EVIDENCE_ID", help="Evidence record id (EVD-…).")],
    actor: ActorOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Deactivate one evidence record of a case (protected). Records are never edited or deleted: a
    correction is a new record, and the old one is deactivated."""
    from store.research import check_case_id, check_evidence_id

    actor = _actor_required(actor, "deactivating evidence")
    check_case_id(case_id)
    check_evidence_id(evidence_id)
    with _configuration_store() as store:
        store.deactivate_evidence(case_id, evidence_id, actor)
        case = store.get_case(case_id)
    _emit_case(case, as_json, content=False)


@research_app.command("cases")
def cases_command(as_json: JsonFlag = False) -> None:
    """List research cases, newest first, with their active and total evidence counts."""
    from control.output import emit

    store = _read_store()
    if store is None:
        cases = []
    else:
        with store:
            cases = store.list_cases()
    emit(cases_json(cases), as_json, lambda console: render_cases(console, cases))


# ----------------------------------------------------------------------------------------------- input


def read_input(path: Path, model: "type[InputT]", *, what: str, code: str) -> "InputT":
    """Read the JSON file ``path`` as ``model`` (:class:`CaseInput` or :class:`EvidenceAddInput`) and
    return it with every ``path`` record replaced by one carrying the file's content.

    Raises :class:`InvalidInput` (nothing is written): ``input_not_found``, ``input_unreadable``,
    ``input_too_large``, ``invalid_json``, ``code`` (the JSON is not a valid ``model``: the message
    names each bad field), or an evidence file error (see :func:`read_evidence_file`).
    """
    from control.inputs import parse_model

    raw = _read_bounded(path, MAX_INPUT_FILE_BYTES, what=f"{what} file", codes="input")
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise InvalidInput("invalid_json", f"{what} file {str(path)!r} is not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise InvalidInput(
            "invalid_json",
            f"{what} file {str(path)!r} is not valid JSON: {error.msg} at line {error.lineno} "
            f"column {error.colno}",
        ) from None
    parsed = parse_model(model, data, what=what, code=code)
    base = path.parent
    resolved = [_resolved(item, index, base) for index, item in enumerate(parsed.evidence)]
    return parsed.model_copy(update={"evidence": resolved})


def read_evidence_file(path: Path, *, label: str) -> str:
    """The UTF-8 text of the evidence file ``path`` (``label`` names the record in messages).

    The file must be a regular file (not a directory, device or pipe) of at most
    :data:`MAX_EVIDENCE_CONTENT_BYTES`; the size is checked before the content is read. Raises
    :class:`InvalidInput` ``evidence_path_not_found``, ``evidence_path_unreadable``,
    ``evidence_path_not_a_file``, ``evidence_too_large`` (naming the size and the limit) or
    ``evidence_not_utf8``.
    """
    from contracts.research import MAX_EVIDENCE_CONTENT_BYTES

    raw = _read_bounded(path, MAX_EVIDENCE_CONTENT_BYTES, what=f"{label} file", codes="evidence")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InvalidInput(
            "evidence_not_utf8",
            f"{label} file {str(path)!r} is not UTF-8 text (invalid byte at offset {error.start})",
        ) from None


def _resolved(item: "EvidenceInput", index: int, base: Path) -> "EvidenceInput":
    from contracts.research import EvidenceInput, check_evidence_content

    if item.path is None:
        return item
    label = f"evidence[{index}] path {item.path!r}"
    content = read_evidence_file(_inside(base, item.path, label), label=label)
    try:
        check_evidence_content(content)
    except ValueError as error:
        raise InvalidInput("invalid_evidence", f"{label}: {error}") from None
    if "\x00" in content:
        raise InvalidInput("invalid_evidence", f"{label}: the file holds NUL bytes; evidence is text")
    return EvidenceInput(kind=item.kind, content=content, source_ref=item.source_ref)


def _inside(base: Path, relative: str, label: str) -> Path:
    """``relative`` resolved inside ``base`` (the input file's directory), symlinks followed.

    Evidence is sent to model providers in full, so a case file may only name files beside it: an
    absolute path, ``..`` out of the directory or a symlink pointing out of it is refused
    (``evidence_path_outside_input_dir``), as is a path that does not exist (``evidence_path_not_found``).
    """
    if Path(relative).is_absolute():
        raise InvalidInput(
            "evidence_path_outside_input_dir",
            f"{label}: an absolute path is refused; name a file inside the input file's directory",
        )
    root = base.resolve()
    try:
        target = (root / relative).resolve(strict=True)
    except FileNotFoundError:
        raise InvalidInput("evidence_path_not_found", f"{label}: no such file") from None
    except (OSError, RuntimeError) as error:
        raise InvalidInput("evidence_path_unreadable", f"{label}: {type(error).__name__}") from None
    if not target.is_relative_to(root):
        raise InvalidInput(
            "evidence_path_outside_input_dir",
            f"{label}: it leads outside the input file's directory; evidence files must be inside it",
        )
    return target


_FILE_ERRORS: Final = {
    "input": ("input_not_found", "input_unreadable", "input_not_a_file", "input_too_large"),
    "evidence": (
        "evidence_path_not_found",
        "evidence_path_unreadable",
        "evidence_path_not_a_file",
        "evidence_too_large",
    ),
}


def _read_bounded(path: Path, limit: int, *, what: str, codes: str) -> bytes:
    """The bytes of the regular file ``path``, refused when over ``limit`` bytes: checked on the open
    file before reading, and again while reading in case it grew. ``codes`` (``input`` or
    ``evidence``) picks the error codes of :data:`_FILE_ERRORS`."""
    not_found, unreadable, not_a_file, too_large = _FILE_ERRORS[codes]
    shown = str(path)
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below as not a file.
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise InvalidInput(not_found, f"{what} {shown!r} does not exist") from None
    except OSError as error:
        raise InvalidInput(unreadable, f"{what} {shown!r}: {error.strerror}") from None
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise InvalidInput(not_a_file, f"{what} {shown!r} is not a regular file")
        if status.st_size > limit:
            raise InvalidInput(too_large, f"{what} {shown!r} is {status.st_size} bytes; the limit is {limit}")
        chunks: list[bytes] = []
        remaining = limit + 1
        while remaining > 0:
            chunk = os.read(descriptor, min(remaining, 1024 * 1024))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
    except OSError as error:
        raise InvalidInput(unreadable, f"{what} {shown!r}: {error.strerror}") from None
    finally:
        os.close(descriptor)
    raw = b"".join(chunks)
    if len(raw) > limit:
        raise InvalidInput(too_large, f"{what} {shown!r} is over {limit} bytes; the limit is {limit}")
    return raw


# ----------------------------------------------------------------------------------------------- views


def _time(value: Any) -> str:
    """ISO 8601 UTC with ``Z`` (DESIGN.md "Values")."""
    import datetime as dt

    return str(value.astimezone(dt.UTC).isoformat().replace("+00:00", "Z"))


def case_json(case: "ResearchCase", *, content: bool = False) -> dict[str, Any]:
    """A case as ``--json`` prints it (module docstring); ``content`` adds each record's content."""
    evidence = []
    for record in case.evidence:
        item: dict[str, Any] = {
            "evidence_id": record.evidence_id,
            "kind": record.kind.value,
            "factual": record.kind.factual,
            "source_ref": record.source_ref,
            "sha256": record.sha256,
            "active": record.active,
            "size_bytes": len(record.content.encode("utf-8")),
            "added_by": record.added_by,
            "added_at": _time(record.added_at),
            "deactivated_by": record.deactivated_by,
            "deactivated_at": _time(record.deactivated_at) if record.deactivated_at else None,
        }
        if content:
            item["content"] = record.content
        evidence.append(item)
    return {
        "case_id": case.case_id,
        "subject": case.subject.model_dump(mode="json"),
        "created_by": case.created_by,
        "created_at": _time(case.created_at),
        "evidence": evidence,
        "evidence_digest": case.evidence_digest,
    }


def cases_json(cases: "list[ResearchCase]") -> dict[str, Any]:
    """``research cases --json``: ``{"cases": [...]}`` (module docstring), newest first."""
    return {
        "cases": [
            {
                "case_id": case.case_id,
                "kind": case.subject.kind,
                "identifier": case.subject.identifier,
                "title": case.subject.title,
                "evidence_active": len(case.active_evidence),
                "evidence_total": len(case.evidence),
                "created_at": _time(case.created_at),
            }
            for case in cases
        ]
    }


def render_case(console: "Console", data: dict[str, Any]) -> None:
    """The human view of :func:`case_json` ``data``: the case, its evidence table and, when ``data``
    holds content, each record's content (shown literally)."""
    from control.output import safe_text, table

    subject = data["subject"]
    console.print(
        table(
            f"research case {data['case_id']}",
            ["field", "value"],
            [
                ["kind", subject["kind"]],
                ["identifier", subject["identifier"]],
                ["title", subject["title"]],
                ["created by", data["created_by"]],
                ["created at", data["created_at"]],
                ["evidence digest", data["evidence_digest"]],
            ],
        )
    )
    console.print(
        table(
            "evidence",
            ["id", "kind", "factual", "active", "bytes", "sha256", "source", "added by", "added at"],
            [
                [
                    item["evidence_id"],
                    item["kind"],
                    "yes" if item["factual"] else "no",
                    "yes"
                    if item["active"]
                    else f"no (by {item['deactivated_by']} at {item['deactivated_at']})",
                    str(item["size_bytes"]),
                    item["sha256"][:12],
                    item["source_ref"],
                    item["added_by"],
                    item["added_at"],
                ]
                for item in data["evidence"]
            ],
        )
    )
    for item in data["evidence"]:
        if "content" in item:
            state = "active" if item["active"] else "inactive"
            console.print(safe_text(f"── {item['evidence_id']} ({item['kind']}, {state}) ──", style="bold"))
            console.print(safe_text(item["content"]))


def render_cases(console: "Console", cases: "list[ResearchCase]") -> None:
    """The ``research cases`` table."""
    from control.output import table

    if not cases:
        console.print("no research cases — create one with `specialists research case-create`")
        return
    rows = cases_json(cases)["cases"]
    console.print(
        table(
            "research cases",
            ["case", "kind", "identifier", "title", "evidence (active/total)", "created at"],
            [
                [
                    row["case_id"],
                    row["kind"],
                    row["identifier"],
                    row["title"],
                    f"{row['evidence_active']}/{row['evidence_total']}",
                    row["created_at"],
                ]
                for row in rows
            ],
        )
    )


def _emit_case(case: "ResearchCase", as_json: bool, *, content: bool) -> None:
    from control.output import emit

    data = case_json(case, content=content)
    emit(data, as_json, lambda console: render_case(console, data))


# ----------------------------------------------------------------------------------------------- store


def _actor_required(actor: str | None, action: str) -> str:
    from control.cli import _actor_required as required

    return required(actor, action)


def _configuration_store() -> Any:
    """The store for a protected change: the action token is required before anything is created,
    then checked against the deployment's (see ``control.cli._open_configuration_store``)."""
    from control.cli import _open_configuration_store

    return _open_configuration_store()


def _read_store() -> Any:
    """The store for reading, or ``None`` when no database exists yet (nothing is created)."""
    from control.cli import _open_store

    return _open_store(create=False)
