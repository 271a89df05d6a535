"""Request ids of ``queue add`` (docs/architecture.md "Goal queue"). Pure: no I/O.

An operator (or a script) that does not know whether its ``queue add`` reached the queue — a timeout,
a dropped connection — sends it again with the same request id: the queue answers with the item the
first one added (``deduplicated``) instead of adding a second. The item keeps the request id and
the sha256 of the proposal it was added with (:class:`AddedBy`); the same id with another proposal
is refused ``request_id_conflict``. A request id is one line of 1–200 printable characters, not
blank (:func:`contracts.ids.check_request_id`, the rule of every request id).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict

from contracts.ids import check_request_id
from contracts.intake_source import Sha256

RequestId = Annotated[str, AfterValidator(check_request_id)]


class AddedBy(BaseModel):
    """The ``queue add`` an item came from, when it named a request id."""

    model_config = ConfigDict(frozen=True)

    request_id: RequestId
    proposal_sha256: Sha256
    """sha256 of the canonical JSON of the proposal as it was added (later updates do not change it)."""
