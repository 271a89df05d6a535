"""A worker deployment's versions as the operator sees them (``specialists versions show --json``;
docs/architecture.md "Safe upgrades")."""

from __future__ import annotations

import re
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict

from contracts.errors import InvalidInput

DEPLOYMENT_NAME: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$")
"""A deployment name: no dot (Temporal writes a version as ``<deployment>.<build id>``)."""

BUILD_ID: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,199}$")
"""A build id, e.g. a release number or an image tag."""

VersionStatus = Literal["created", "current", "ramping", "draining", "drained", "inactive", "unspecified"]
Drainage = Literal["draining", "drained", "unspecified"]


def check_deployment_name(value: str, *, variable: str) -> str:
    if not DEPLOYMENT_NAME.match(value):
        raise InvalidInput(
            "invalid_setting",
            f"{variable}={value!r}: a deployment name is 1..100 letters, digits, '_' or '-' "
            "(no dot), starting with a letter or digit",
        )
    return value


def check_build_id(value: str, *, variable: str) -> str:
    if not BUILD_ID.match(value):
        raise InvalidInput(
            "invalid_setting",
            f"{variable}={value!r}: a build id is 1..200 letters, digits, '.', '_', '+' or '-', "
            "starting with a letter or digit",
        )
    return value


class DeploymentVersionView(BaseModel):
    """One version (build id) of the deployment."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    build_id: str
    status: VersionStatus
    drainage: Drainage
    """Whether workflows pinned to this version are still open (``draining``) or all closed
    (``drained``): a drained version's workers can be stopped. Only known once the version stopped
    being current or ramping, and refreshed by the server every few minutes."""


class DeploymentView(BaseModel):
    """A worker deployment: which version takes new work and every version the server knows."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    deployment: str
    exists: bool
    current_build_id: str | None
    ramping_build_id: str | None
    ramping_percentage: float
    versions: list[DeploymentVersionView]
