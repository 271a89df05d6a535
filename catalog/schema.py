"""The pydantic schema of ``catalog.v1.json`` (schema version 1).

A catalog file is ``{"catalog_version", "schema_version", "reviewed_on", "upstream", "profiles"}``.
Each profile carries its guidance in the catalog's own words, routing signals, its independent
reviewer and its provenance. Structural rules live here; cross-profile rules (duplicates, reviewers)
and text safety live in :mod:`catalog.validation`.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from contracts.enums import TaskType, WorkClass

ProfileId = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$", max_length=64)]
Sha256Hex = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
CommitSha = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{40}$")]
Text = Annotated[str, StringConstraints(min_length=1, max_length=2_000)]
Phrase = Annotated[str, StringConstraints(min_length=1, max_length=200)]
Signal = Annotated[str, StringConstraints(min_length=2, max_length=64)]
SpdxId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9.+-]{1,64}$")]
# A relative POSIX path of plain segments: no leading slash, no empty, "." or ".." segment.
SourcePath = Annotated[
    str,
    StringConstraints(
        pattern=r"^[A-Za-z0-9_-][A-Za-z0-9._-]*(/[A-Za-z0-9_-][A-Za-z0-9._-]*)*$", max_length=300
    ),
]

SUPPORTED_SCHEMA_VERSION = 1


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RoutingSignals(_Strict):
    """What routes a work item to this profile.

    ``keywords`` are lower-case words or phrases matched as whole words in the normalised title and
    description; ``domains`` and ``roles`` match the work item's ``domain``/``roles``; ``task_types``
    are the task types this profile takes.
    """

    keywords: Annotated[list[Signal], Field(min_length=1, max_length=80)]
    domains: Annotated[list[Signal], Field(max_length=20)] = []
    roles: Annotated[list[Signal], Field(max_length=20)] = []
    task_types: Annotated[list[TaskType], Field(max_length=8)] = []


class Provenance(_Strict):
    """Where a profile's guidance comes from.

    ``origin`` ``upstream``: adapted from ``source_path`` in ``repository`` at ``source_commit`` (or the
    catalog's global pin when ``source_commit`` is null), whose file hashes to ``sha256``.
    ``origin`` ``local``: written here with no upstream file; ``local_reason`` says why.
    Completeness per origin is checked by :mod:`catalog.validation`.
    """

    origin: Literal["upstream", "local"]
    repository: Annotated[str, StringConstraints(min_length=1, max_length=300)] | None = None
    upstream_name: Annotated[str, StringConstraints(max_length=120)] | None = None
    source_path: SourcePath | None = None
    source_commit: CommitSha | None = None
    sha256: Sha256Hex | None = None
    license: SpdxId | None = None
    reviewed_on: dt.date
    local_reason: Annotated[str, StringConstraints(max_length=1_000)] | None = None


class Profile(_Strict):
    """One specialist profile."""

    id: ProfileId
    name: Annotated[str, StringConstraints(min_length=1, max_length=80)]
    guidance: Text
    deliverables: Annotated[list[Phrase], Field(min_length=1, max_length=12)]
    evidence_needs: Annotated[list[Phrase], Field(min_length=1, max_length=12)]
    risk_limits: Annotated[list[Phrase], Field(min_length=1, max_length=12)]
    work_class: WorkClass
    reviewer: ProfileId
    routing: RoutingSignals
    provenance: Provenance


class UpstreamPin(_Strict):
    """The global upstream pin: repository URL, commit and license of the profile source."""

    repository: Annotated[str, StringConstraints(min_length=1, max_length=300)]
    commit: CommitSha
    license: SpdxId
    license_path: SourcePath | None = None
    license_sha256: Sha256Hex | None = None


class CatalogFile(_Strict):
    """A whole catalog file."""

    catalog_version: Annotated[str, StringConstraints(pattern=r"^\d+\.\d+\.\d+$")]
    schema_version: Literal[1]
    reviewed_on: dt.date
    upstream: UpstreamPin
    profiles: Annotated[list[Profile], Field(min_length=1, max_length=200)]
