"""The repository an approval, an execution or a probe approval would act in, checked before anything
is sent (docs/architecture.md "Operator contract"): a run whose contract names a repository that is
no longer allow-listed here — never registered in this store, or deactivated since the run was
captured — could only fail when it runs, so the CLI and the console refuse the action up front, as
they refuse an unregistered actor. The worker still fails closed on its own (``run_probe`` and the
execution refuse such a repository), so a repository removed between this check and the action
changes nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from contracts.errors import NotFound

if TYPE_CHECKING:
    from temporalio.client import Client

    from contracts.runs import RunStatus, RunView
    from store.store import Store


def require_run_repository(store: Store | None, view: RunView, action: str) -> None:
    """Refuse ``action`` on the run ``view`` shows when its contract names a repository ``store``
    does not allow: :class:`NotFound` ``unknown_repository`` (exit 3) when it is not registered
    (no store at all included), :class:`contracts.errors.Refused` ``repository_deactivated``
    (exit 4) when it was deactivated. A run that names no repository passes (the workflow answers
    for what such a run may do)."""
    from store.repositories import require_active

    alias = view.contract.repo_alias if view.contract is not None else None
    if alias is None:
        return
    if store is None:
        raise NotFound(
            "unknown_repository",
            f"{action}: run {view.run_id}'s repository {alias!r} is not allow-listed here (no store yet)",
        )
    with store:
        try:
            record = store.get_repository(alias)
        except NotFound as error:
            raise NotFound(
                "unknown_repository",
                f"{action}: run {view.run_id}'s repository {alias!r} is not allow-listed (never "
                f"registered here, or removed): {error.message}",
            ) from None
        require_active(record)


async def require_waiting_run_repository(
    client: Client, store_opener: Callable[[], Store | None], run_id: str, waiting: RunStatus, action: str
) -> None:
    """:func:`require_run_repository` for a run that is running and in status ``waiting`` (the one
    ``action`` is taken in); a run in another status, or finished, is left to the workflow's own
    refusal, which says why. Refuses ``no_worker`` (exit 5) when no worker polls the running run's
    task queue and ``unknown_run`` (exit 3), as the action itself would."""
    from control.runs import get_view, require_run_worker

    if not await require_run_worker(client, run_id):
        return
    view = await get_view(client, run_id)
    if view.status is waiting:
        require_run_repository(store_opener(), view, action)
