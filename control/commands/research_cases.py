"""``specialists research``: research cases and their evidence (docs/architecture.md "Research team").

Commands: ``case-create`` and ``evidence-add`` (read a JSON input file, :mod:`control.case_inputs`),
``evidence-deactivate``, ``case-status`` (all four protected: the actor's key must be its key in
force, as for every configuration change), ``case-show`` and ``cases`` (read-only). JSON shapes:
:mod:`control.case_views`.
The group (these and the team commands) is :mod:`control.commands.research`.
"""

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from control.commands.common import (
    ActorOption,
    JsonFlag,
    actor_required,
    open_configuration_store,
    open_store,
)

if TYPE_CHECKING:
    from store.store import Store


def _signed_store(actor: str) -> "Store":
    """The store for a protected case change by ``actor``, after checking that the configured key is
    ``actor``'s key in force (nothing is created without a key)."""
    from control.keys import require_signer

    signer = require_signer(actor)
    store = open_configuration_store()
    try:
        store.require_signer(signer)
    except BaseException:
        store.close()
        raise
    return store


app = typer.Typer()

InputOption = Annotated[
    Path,
    typer.Option(
        "--input",
        help='JSON file: {"evidence": [{"kind", "content" | "path", "source_ref"}]} (a path is read '
        "relative to this file's directory).",
    ),
]
CaseArgument = Annotated[str, typer.Argument(metavar="ID", help="Research case id (RSC-…).")]


@app.command("case-create")
def case_create_command(
    input_file: InputOption, actor: ActorOption = None, as_json: JsonFlag = False
) -> None:
    """Create a research case from a JSON file: {"subject": {"kind", "identifier", "title"},
    "evidence": [...]} (protected)."""
    from contracts.research import CaseInput
    from control.case_inputs import read_input
    from control.case_views import emit_case

    actor = actor_required(actor, "creating a research case")
    case_input = read_input(input_file, CaseInput, what="case input", code="invalid_case_input")
    with _signed_store(actor) as store:
        case = store.create_case(case_input, actor)
    emit_case(case, as_json, content=False)


@app.command("case-show")
def case_show_command(
    case_id: CaseArgument,
    content: Annotated[bool, typer.Option("--content", help="Also show each record's content.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Show a research case and its evidence records (content only with --content)."""
    from contracts.errors import NotFound
    from control.case_views import emit_case
    from store.research import check_case_id

    check_case_id(case_id)
    store = open_store(create=False)
    if store is None:
        raise NotFound("unknown_case", f"no research case {case_id}")
    with store:
        case = store.get_case(case_id)
    emit_case(case, as_json, content=content)


@app.command("evidence-add")
def evidence_add_command(
    case_id: CaseArgument, input_file: InputOption, actor: ActorOption = None, as_json: JsonFlag = False
) -> None:
    """Add evidence records to a case from a JSON file: {"evidence": [...]} (protected; all or none)."""
    from contracts.research import EvidenceAddInput
    from control.case_inputs import read_input
    from control.case_views import emit_case
    from store.research import check_case_id

    actor = actor_required(actor, "adding evidence")
    check_case_id(case_id)
    added = read_input(input_file, EvidenceAddInput, what="evidence input", code="invalid_evidence_input")
    with _signed_store(actor) as store:
        store.add_evidence(case_id, list(added.evidence), actor)
        case = store.get_case(case_id)
    emit_case(case, as_json, content=False)


@app.command("evidence-deactivate")
def evidence_deactivate_command(
    case_id: CaseArgument,
    evidence_id: Annotated[str, typer.Argument(metavar="EVIDENCE_ID", help="Evidence record id (EVD-…).")],
    actor: ActorOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Deactivate one evidence record of a case (protected). Records are never edited or deleted: a
    correction is a new record, and the old one is deactivated."""
    from control.case_views import emit_case
    from store.research import check_case_id, check_evidence_id

    actor = actor_required(actor, "deactivating evidence")
    check_case_id(case_id)
    check_evidence_id(evidence_id)
    with _signed_store(actor) as store:
        store.deactivate_evidence(case_id, evidence_id, actor)
        case = store.get_case(case_id)
    emit_case(case, as_json, content=False)


@app.command("case-status")
def case_status_command(
    case_id: CaseArgument,
    status: Annotated[
        str, typer.Argument(metavar="STATUS", help="open | validation | ready_to_publish | closed")
    ],
    actor: ActorOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Move a case to STATUS (protected; only a person moves a case). Allowed: open → validation →
    ready_to_publish, one step back, any → closed, closed → open."""
    from contracts.errors import InvalidInput
    from contracts.research import CaseStatus
    from control.case_views import emit_case
    from store.research import check_case_id

    actor = actor_required(actor, "moving a research case")
    check_case_id(case_id)
    try:
        target = CaseStatus(status)
    except ValueError:
        names = " | ".join(item.value for item in CaseStatus)
        raise InvalidInput("invalid_case_status", f"status {status!r} is not one of {names}") from None
    with _signed_store(actor) as store:
        case = store.set_case_status(case_id, target, actor)
    emit_case(case, as_json, content=False)


@app.command("cases")
def cases_command(as_json: JsonFlag = False) -> None:
    """List research cases, newest first, with their active and total evidence counts."""
    from control.case_views import cases_json, render_cases
    from control.output import emit

    store = open_store(create=False)
    if store is None:
        cases = []
    else:
        with store:
            cases = store.list_cases()
    emit(cases_json(cases), as_json, lambda console: render_cases(console, cases))
