"""The ``WorkItem`` an operator or an integration submits (docs/architecture.md "Operator contract").

Every bound is enforced, never applied by cutting: an over-long field is a validation error naming the
field. Unknown keys are refused. Text follows the rules of :mod:`contracts.text_rules`: ``title``,
``domain``, each role and each evidence ref are one line (no control, format or separator
character); ``description`` keeps line feeds and tabs and nothing else of those. A refused character
is named, never stripped.
"""

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints, field_validator

from contracts.constants import (
    MAX_DESCRIPTION_CHARS,
    MAX_EVIDENCE_REF_CHARS,
    MAX_EVIDENCE_REFS,
    MAX_LIST_ITEMS,
    MAX_SHORT_TEXT_CHARS,
    MAX_TITLE_CHARS,
)
from contracts.enums import RiskFlag, TaskType
from contracts.text_rules import check_multiline, check_one_line

ShortText = Annotated[str, StringConstraints(min_length=1, max_length=MAX_SHORT_TEXT_CHARS)]


def _printable_ref(value: str) -> str:
    return check_one_line(value, "an evidence ref")


EvidenceRef = Annotated[
    str,
    StringConstraints(
        max_length=MAX_EVIDENCE_REF_CHARS,
        # kind:id — a lower-case kind, a colon, then an id without whitespace.
        pattern=r"^[a-z][a-z0-9_-]{0,31}:\S+$",
    ),
    # ... nor any control, format (bidi, zero-width) or separator character, which \S lets through.
    AfterValidator(_printable_ref),
]
RepoAlias = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")]


class WorkItem(BaseModel):
    """A unit of work to route: an incident, a failing release gate, a slow query, a research case.

    Fields and bounds: ``title`` 1..200 characters (required); ``description`` <= 8,000; ``domain`` and
    each role <= 64; ``roles`` and ``risk_flags`` <= 20 items; ``evidence_refs`` <= 50 ``kind:id``
    strings; ``task_type`` one of :class:`TaskType` (default ``investigate``). Raises
    ``pydantic.ValidationError`` on an unknown key or any violated bound.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    title: Annotated[str, StringConstraints(max_length=MAX_TITLE_CHARS)]
    description: Annotated[str, StringConstraints(max_length=MAX_DESCRIPTION_CHARS)] = ""
    domain: Annotated[str, StringConstraints(max_length=MAX_SHORT_TEXT_CHARS)] = ""
    roles: Annotated[list[ShortText], Field(max_length=MAX_LIST_ITEMS)] = []
    risk_flags: Annotated[list[RiskFlag], Field(max_length=MAX_LIST_ITEMS)] = []
    repo_alias: RepoAlias | None = None
    evidence_refs: Annotated[list[EvidenceRef], Field(max_length=MAX_EVIDENCE_REFS)] = []
    task_type: TaskType = TaskType.INVESTIGATE

    @field_validator("title")
    @classmethod
    def _title_one_line(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("title must not be blank")
        return check_one_line(value, "title")

    @field_validator("domain")
    @classmethod
    def _domain_one_line(cls, value: str) -> str:
        return check_one_line(value, "domain")

    @field_validator("roles")
    @classmethod
    def _roles_one_line(cls, value: list[str]) -> list[str]:
        for index, role in enumerate(value):
            check_one_line(role, f"roles[{index}]")
        return value

    @field_validator("description")
    @classmethod
    def _description_lines(cls, value: str) -> str:
        return check_multiline(value, "description")
