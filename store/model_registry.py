"""The model registry: models an operator registered for runs to call (docs/architecture.md "Model
selection").

``replay:*`` ids are built in and never registered. Only ``openai`` and ``anthropic`` models may be
registered. A model's key is never stored: ``api_key_env`` names the environment variable the worker
reads it from.
"""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from typing import Final
from urllib.parse import urlsplit

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from contracts.errors import InvalidInput, NotFound, Refused
from contracts.identity import RecordKind, Signer
from contracts.models import (
    REGISTRABLE_PROVIDERS,
    REPLAY_PROVIDER,
    ModelRecord,
    ModelRegistration,
    ModelSelection,
    is_replay_model,
)
from store.schema import ModelRow
from store.trust import Trust, sign_row

API_KEY_ENV_PATTERN: Final = re.compile(r"[A-Z][A-Z0-9_]{0,55}_API_KEY")
# A registration names a variable the worker sends to the model's endpoint, so it may only name a
# variable meant for that: ``*_API_KEY``, never the deployment's own settings.
RESERVED_ENV_PREFIX: Final = "SPECIALISTS_"
MAX_BASE_URL_CHARS: Final = 2000


def check_registration(registration: ModelRegistration) -> ModelRegistration:
    """Return ``registration`` if the store would accept it, else raise :class:`InvalidInput`:
    ``replay_is_built_in``, ``unknown_provider``, ``invalid_base_url`` or ``invalid_api_key_env``."""
    provider = registration.provider
    if provider == REPLAY_PROVIDER:
        raise InvalidInput(
            "replay_is_built_in", f"{registration.id!r}: replay models are built in and need no registration"
        )
    if provider not in REGISTRABLE_PROVIDERS:
        raise InvalidInput(
            "unknown_provider",
            f"provider {provider!r} cannot be registered: use one of {', '.join(REGISTRABLE_PROVIDERS)}",
        )
    if registration.base_url is not None:
        check_base_url(registration.base_url)
    name = registration.api_key_env
    if name is not None and (not API_KEY_ENV_PATTERN.fullmatch(name) or name.startswith(RESERVED_ENV_PREFIX)):
        raise InvalidInput(
            "invalid_api_key_env",
            "--api-key-env must name a key variable: upper-case letters, digits or '_', ending in "
            "_API_KEY, at most 64 characters, not SPECIALISTS_* (the worker sends its value to the "
            "model's endpoint, so it may name nothing else)",
        )
    return registration


def check_base_url(url: str) -> str:
    """Return ``url`` if it is an ``http``/``https`` URL with a host and no credentials, query or
    fragment; else raise ``invalid_base_url``. The URL itself is never echoed (it could hold a secret).
    """
    problem = _base_url_problem(url)
    if problem is not None:
        raise InvalidInput("invalid_base_url", f"--base-url {problem}")
    return url


def _base_url_problem(url: str) -> str | None:
    if not url or len(url) > MAX_BASE_URL_CHARS:
        return f"must be 1..{MAX_BASE_URL_CHARS} characters"
    if any(c.isspace() or unicodedata.category(c).startswith("C") for c in url):
        return "must not contain whitespace or control characters"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a malformed port
    except ValueError:
        return "is not a valid URL"
    if parts.scheme not in ("http", "https"):
        return "must start with http:// or https://"
    if "@" in parts.netloc or parts.username is not None or parts.password is not None:
        return "must not carry credentials: name the key's environment variable with --api-key-env"
    if not parts.hostname:
        return "must name a host"
    if parts.query or parts.fragment or url.endswith(("?", "#")):
        return "must not carry a query or fragment"
    return None


def register_model(
    session: Session, trust: Trust, registration: ModelRegistration, signer: Signer, at: dt.datetime
) -> ModelRecord:
    """Register ``registration``, signed by ``signer``. Raises the :func:`check_registration` errors
    (invalid input), the :meth:`Trust.require_signer` refusals or ``duplicate_model`` (refused);
    nothing is written then."""
    check_registration(registration)
    trust.require_signer(signer)
    if session.get(ModelRow, registration.id) is not None:
        raise _duplicate(registration.id)
    row = ModelRow(
        id=registration.id,
        provider=registration.provider,
        name=registration.name,
        base_url=registration.base_url,
        api_key_env=registration.api_key_env,
        timeout_s=registration.timeout_s,
        ceiling=registration.ceiling,
        added_by=signer.actor_id,
        added_at=at,
        active=True,
        deactivated_by=None,
        deactivated_at=None,
    )
    sign_row(RecordKind.MODEL, row, signer, at)
    session.add(row)
    try:
        session.flush()
    except IntegrityError as exc:
        raise _duplicate(registration.id) from exc
    return model_record(row)


def deactivate_model(
    session: Session, trust: Trust, model_id: str, signer: Signer, at: dt.datetime
) -> ModelRecord:
    """Deactivate the registered model ``model_id`` as ``signer``: it stays listed, cannot be selected
    and no new run may capture it. Raises ``unknown_model`` (not found), ``model_deactivated``
    (already), ``configuration_unverified`` or the :meth:`Trust.require_signer` refusals."""
    trust.require_signer(signer)
    row = session.get(ModelRow, model_id)
    if row is None:
        raise _unknown(model_id)
    trust.require(RecordKind.MODEL, [row])
    if not row.active:
        raise Refused(
            "model_deactivated", f"model {model_id!r} was already deactivated by {row.deactivated_by}"
        )
    row.active = False
    row.deactivated_by = signer.actor_id
    row.deactivated_at = at
    sign_row(RecordKind.MODEL, row, signer, at)
    session.flush()
    return model_record(row)


def list_models(session: Session, trust: Trust) -> list[ModelRecord]:
    """All registered models (active or not), by id; ``configuration_unverified`` names any that is
    not verified."""
    rows = list(session.scalars(select(ModelRow).order_by(ModelRow.id)))
    trust.require(RecordKind.MODEL, rows)
    return [model_record(row) for row in rows]


def get_model(session: Session, trust: Trust, model_id: str) -> ModelRecord:
    """The registered model ``model_id`` (active or not). Raises ``unknown_model`` (not found; replay
    ids are built in, not registered, and raise it too) or ``configuration_unverified``."""
    row = session.get(ModelRow, model_id)
    if row is None:
        raise _unknown(model_id)
    trust.require(RecordKind.MODEL, [row])
    return model_record(row)


def model_available(session: Session, trust: Trust, model_id: str) -> bool:
    """Whether a new run may use ``model_id``: a replay id, or a registered, verified, active model."""
    if is_replay_model(model_id):
        return True
    row = session.get(ModelRow, model_id)
    return row is not None and trust.problem(RecordKind.MODEL, row) is None and bool(row.active)


def require_usable(
    session: Session, trust: Trust, model_ids: list[str | None], *, registered_only: bool = True
) -> None:
    """Raise for the first of ``model_ids`` a new run may not use: ``unknown_model`` (not found:
    neither a replay id nor registered; with ``registered_only`` false an unregistered id is left to
    the model call to refuse), ``configuration_unverified`` or ``model_deactivated``."""
    for model_id in model_ids:
        if model_id is None or is_replay_model(model_id):
            continue
        row = session.get(ModelRow, model_id)
        if row is None and not registered_only:
            continue
        if row is None:
            raise NotFound(
                "unknown_model",
                f"model {model_id!r} is not registered: add it with "
                f"`specialists models add {model_id} --actor ID` first (replay:* models are built in)",
            )
        trust.require(RecordKind.MODEL, [row])
        if not row.active:
            raise Refused(
                "model_deactivated",
                f"model {model_id!r} was deactivated by {row.deactivated_by} at "
                f"{row.deactivated_at.isoformat() if row.deactivated_at else '?'}: select another model",
            )


def require_selectable(session: Session, trust: Trust, selection: ModelSelection) -> None:
    """:func:`require_usable` for every model of ``selection`` (primary, fallbacks in order, support)."""
    require_usable(session, trust, [selection.primary, *selection.fallbacks, selection.support])


def model_record(row: ModelRow) -> ModelRecord:
    """The contract record of a stored model."""
    return ModelRecord(
        id=row.id,
        provider=row.provider,
        name=row.name,
        base_url=row.base_url,
        api_key_env=row.api_key_env,
        timeout_s=row.timeout_s,
        ceiling=row.ceiling,
        added_by=row.added_by,
        added_at=row.added_at,
        active=bool(row.active),
        deactivated_by=row.deactivated_by,
        deactivated_at=row.deactivated_at,
    )


def _unknown(model_id: str) -> NotFound:
    return NotFound("unknown_model", f"model {model_id!r} is not registered: add it with `models add`")


def _duplicate(model_id: str) -> Refused:
    return Refused("duplicate_model", f"model {model_id!r} is already registered")
