"""Operator configuration records as read from the store (DESIGN.md "Storage")."""

from __future__ import annotations

import datetime as dt
from typing import Annotated

from pydantic import BaseModel, ConfigDict, StringConstraints

from contracts.policy import AutomationPolicy

ActorId = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9._@-]{0,63}$")]
"""A registered human's id: lower-case letters, digits, ``. _ @ -``; 1..64 characters."""


class PolicyRecord(BaseModel):
    """The automation policy in force, who set it and when (``None`` for the built-in default)."""

    model_config = ConfigDict(frozen=True)

    policy: AutomationPolicy
    set_by: str | None = None
    set_at: dt.datetime | None = None


class RepositoryRecord(BaseModel):
    """An allow-listed repository: alias → absolute path of a git repository, default branch."""

    model_config = ConfigDict(frozen=True)

    alias: str
    path: str
    default_branch: str
    added_by: str
    added_at: dt.datetime


class ActorRecord(BaseModel):
    """A registered human actor. ``registered_by`` is ``None`` for the first actor."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    registered_by: str | None
    registered_at: dt.datetime
