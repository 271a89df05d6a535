"""What ``create`` would refuse of a previewed run (``specialists route --tier``, the work brief and
``POST /api/route``; docs/architecture.md "Orchestration").

A route preview computes the route, the effective tier and the review of a run without writing or
starting anything. The repository rules are checked only where the run's contract is captured
(``catalog.capture.capture``, the ``capture_contract`` activity), so a preview says in advance which of
them would refuse the run: ``repo_alias_required`` (a worktree or pr_ready run names no repository),
``unknown_repository`` (it names one that is not registered) and ``repository_deactivated`` (any run
naming a deactivated repository). Pure but for :func:`repository_active`, which reads the store it is
given.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from contracts.enums import Tier
    from store.store import Store

CREATE_REFUSAL_KEY = "create_refusal"
"""The preview's JSON key: ``{"code", "message"}`` when ``create`` would refuse the run, else ``null``."""


def create_refusal(alias: str | None, tier: Tier, active: bool | None) -> dict[str, str] | None:
    """The refusal ``create`` would give a ``tier`` run naming repository ``alias`` (``active``:
    whether that repository is active; ``None`` when no alias is given or it is not registered), as
    ``{"code", "message"}``; ``None`` when the repository rules take the run."""
    from contracts.policy import APPROVAL_TIERS

    edits = tier in APPROVAL_TIERS
    if edits and alias is None:
        return _refusal(
            "repo_alias_required",
            f"a {tier.value} run changes code: the work item needs the repo_alias of an allow-listed "
            "repository (see `specialists repos`)",
        )
    if alias is not None and active is False:
        return _refusal(
            "repository_deactivated",
            f"repository {alias!r} is deactivated: no new run may use it (see `specialists repos`)",
        )
    if edits and alias is not None and active is None:
        return _refusal(
            "unknown_repository",
            f"no repository is registered as {alias!r}: a {tier.value} run changes code in an "
            "allow-listed repository (`specialists repos add`)",
        )
    return None


def _refusal(code: str, message: str) -> dict[str, str]:
    return {"code": code, "message": message}


def repository_active(store: Store, alias: str | None) -> bool | None:
    """Whether the repository registered as ``alias`` is active (``None``: no alias, or none is
    registered as ``alias``). Reads, never writes."""
    from contracts.errors import NotFound

    if alias is None:
        return None
    try:
        return store.get_repository(alias).active
    except NotFound:
        return None
