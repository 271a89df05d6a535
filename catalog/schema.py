"""The pydantic schema of ``catalog.v1.json`` (schema version 1).

A catalog file is ``{"catalog_version", "schema_version", "reviewed_on", "upstream", "profiles"}``.
Each profile carries its guidance in the catalog's own words, routing signals, its independent
reviewer and its provenance. Structural rules live here; cross-profile rules (duplicates, reviewers)
and text safety live in :mod:`catalog.validation`.

The classes build their validators on first use (``defer_build``), not on import: the reviewed
catalog's models are made by :func:`construct_reviewed_catalog`, which validates nothing, so a process
that only reads them never pays for building validators (the route preview does not even import this
module: see :class:`catalog.loaded.LoadedCatalog`).
"""

import datetime as dt
from typing import Annotated, Any, Literal

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
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


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


def construct_reviewed_catalog(data: dict[str, Any]) -> CatalogFile:
    """The :class:`CatalogFile` that ``CatalogFile.model_validate(data)`` returns, built without
    validating anything: only for ``data`` parsed from the exact bytes of the reviewed catalog
    (:data:`catalog.reviewed.REVIEWED_CATALOG_FILE_SHA256`), which passed full validation.

    Only the values validation converts are converted here (dates, enums, nested models); strings
    and lists are taken from ``data`` as they are, so the caller hands over data it no longer uses.
    ``tests/catalog/test_reviewed.py`` checks that the result equals the validated catalog field by
    field, types and set fields included. Never call it on any other data: nothing here checks a
    single rule.
    """
    return CatalogFile.model_construct(
        **{
            **data,
            "reviewed_on": dt.date.fromisoformat(data["reviewed_on"]),
            "upstream": UpstreamPin.model_construct(**data["upstream"]),
            "profiles": [_construct_profile(profile) for profile in data["profiles"]],
        }
    )


def _construct_profile(data: dict[str, Any]) -> Profile:
    routing = dict(data["routing"])
    if "task_types" in routing:
        routing["task_types"] = [TaskType(task) for task in routing["task_types"]]
    provenance = dict(data["provenance"])
    provenance["reviewed_on"] = dt.date.fromisoformat(provenance["reviewed_on"])
    return Profile.model_construct(
        **{
            **data,
            "work_class": WorkClass(data["work_class"]),
            "routing": RoutingSignals.model_construct(**routing),
            "provenance": Provenance.model_construct(**provenance),
        }
    )
