"""The model registry: models an operator registered for runs to call (docs/architecture.md "Model
selection").

``openai`` and ``anthropic`` models are registered with where to reach them; a model's key is never
stored: ``api_key_env`` names the environment variable the worker reads it from. A ``replay:NAME``
model is registered with its recordings file (checked by :func:`contracts.recordings.parse_recordings`
and stored in canonical form, covered by the record's signature); the built-in replay models
(:data:`contracts.models.BUILT_IN_REPLAY_MODELS`) are never registered.
"""

from __future__ import annotations

import datetime as dt
import json
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
    BUILT_IN_REPLAY_MODELS,
    DEFAULT_MODEL_CEILING,
    DEFAULT_MODEL_TIMEOUT_S,
    REGISTRABLE_PROVIDERS,
    REPLAY_PROVIDER,
    ModelRecord,
    ModelRegistration,
    ModelSelection,
    is_built_in_replay_model,
    is_replay_model,
)
from contracts.recordings import InvalidRecordings, RecordingsFile, parse_recordings, recordings_sha256
from store.schema import ModelRow
from store.trust import Trust, sign_row

API_KEY_ENV_PATTERN: Final = re.compile(r"[A-Z][A-Z0-9_]{0,55}_API_KEY")
# A registration names a variable the worker sends to the model's endpoint, so it may only name a
# variable meant for that: ``*_API_KEY``, never the deployment's own settings.
RESERVED_ENV_PREFIX: Final = "SPECIALISTS_"
MAX_BASE_URL_CHARS: Final = 2000
REPLAY_NAME_PATTERN: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def check_registration(registration: ModelRegistration) -> ModelRegistration:
    """Return ``registration`` if the store would accept it, else raise :class:`InvalidInput`:
    ``replay_is_built_in``, ``unknown_provider``, ``invalid_base_url`` or ``invalid_api_key_env``."""
    provider = registration.provider
    if provider == REPLAY_PROVIDER:
        check_replay_id(registration.id)
        raise InvalidInput(
            "recordings_required",
            f"{registration.id!r}: a replay model answers from recordings: register it with "
            '`models add replay:NAME --recordings FILE` (the README\'s "Replay recordings")',
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


def check_replay_id(model_id: str) -> str:
    """Return ``model_id`` if an operator may register it as a replay model; else raise
    ``replay_is_built_in`` (a built-in replay model) or ``invalid_model_id`` (not ``replay:NAME`` with
    NAME 1..64 letters, digits, ``.``, ``_`` or ``-``, starting with a letter or digit)."""
    if is_built_in_replay_model(model_id):
        raise InvalidInput(
            "replay_is_built_in",
            f"{model_id!r} is built in ({', '.join(BUILT_IN_REPLAY_MODELS)}) and cannot be registered: "
            "choose another name",
        )
    name = model_id.partition(":")[2]
    if not is_replay_model(model_id) or not REPLAY_NAME_PATTERN.fullmatch(name):
        raise InvalidInput(
            "invalid_model_id",
            f"{model_id!r}: a replay model id is replay:NAME, NAME 1..64 letters, digits, '.', '_' or "
            "'-', starting with a letter or digit",
        )
    return model_id


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
    row = _new_row(
        registration.id,
        provider=registration.provider,
        name=registration.name,
        base_url=registration.base_url,
        api_key_env=registration.api_key_env,
        timeout_s=registration.timeout_s,
        ceiling=registration.ceiling,
        recordings=None,
    )
    return _insert(session, row, signer, at)


def register_replay_model(
    session: Session,
    trust: Trust,
    model_id: str,
    recordings: RecordingsFile,
    signer: Signer,
    at: dt.datetime,
) -> ModelRecord:
    """Register ``model_id`` (``replay:NAME``) answering from ``recordings``, signed by ``signer``;
    the file is stored in canonical form (:meth:`RecordingsFile.to_json`) and checked again. Raises
    :func:`check_replay_id`'s errors, ``invalid_recordings``, the :meth:`Trust.require_signer`
    refusals or ``duplicate_model``; nothing is written then."""
    check_replay_id(model_id)
    text = recordings.to_json()
    try:
        parse_recordings(text)  # the stored form must read back as a valid file
    except InvalidRecordings as error:
        raise InvalidInput("invalid_recordings", f"the recordings do not check: {error}") from None
    trust.require_signer(signer)
    if session.get(ModelRow, model_id) is not None:
        raise _duplicate(model_id)
    row = _new_row(
        model_id,
        provider=REPLAY_PROVIDER,
        name=model_id.partition(":")[2],
        base_url=None,
        api_key_env=None,
        timeout_s=DEFAULT_MODEL_TIMEOUT_S,
        ceiling=DEFAULT_MODEL_CEILING,
        recordings=text,
    )
    return _insert(session, row, signer, at)


def _new_row(model_id: str, **fields: object) -> ModelRow:
    return ModelRow(id=model_id, active=True, deactivated_by=None, deactivated_at=None, **fields)


def _insert(session: Session, row: ModelRow, signer: Signer, at: dt.datetime) -> ModelRecord:
    """Add the new model ``row`` by ``signer`` at ``at``, signed; ``duplicate_model`` when its id is
    taken (a concurrent registration)."""
    row.added_by = signer.actor_id
    row.added_at = at
    sign_row(RecordKind.MODEL, row, signer, at)
    session.add(row)
    try:
        session.flush()
    except IntegrityError as exc:
        raise _duplicate(row.id) from exc
    return model_record(row)


def replay_recordings(session: Session, trust: Trust, model_id: str) -> str | None:
    """The recordings file of the registered replay model ``model_id`` (verified; active or not:
    a run that captured it keeps calling it), or ``None`` when no replay model of that id is
    registered. Raises ``configuration_unverified``."""
    row = session.get(ModelRow, model_id)
    if row is None or row.recordings is None:
        return None
    trust.require(RecordKind.MODEL, [row])
    return row.recordings


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
    """Whether a new run may use ``model_id``: a built-in replay model, or a registered (replay
    models with their recordings), verified, active model."""
    if is_built_in_replay_model(model_id):
        return True
    row = session.get(ModelRow, model_id)
    return row is not None and trust.problem(RecordKind.MODEL, row) is None and bool(row.active)


def require_usable(
    session: Session, trust: Trust, model_ids: list[str | None], *, registered_only: bool = True
) -> None:
    """Raise for the first of ``model_ids`` a new run may not use: ``unknown_model`` (not found:
    neither a built-in replay model nor registered; with ``registered_only`` false an unregistered
    id is left to the model call to refuse), ``configuration_unverified`` or ``model_deactivated``."""
    for model_id in model_ids:
        if model_id is None or is_built_in_replay_model(model_id):
            continue
        row = session.get(ModelRow, model_id)
        if row is None and not registered_only:
            continue
        if row is None:
            raise NotFound("unknown_model", _unregistered_hint(model_id))
        trust.require(RecordKind.MODEL, [row])
        if not row.active:
            raise Refused(
                "model_deactivated",
                f"model {model_id!r} was deactivated by {row.deactivated_by} at "
                f"{row.deactivated_at.isoformat() if row.deactivated_at else '?'}: select another model",
            )


def require_selectable(session: Session, trust: Trust, selection: ModelSelection) -> None:
    """:func:`require_usable` for every model of ``selection`` (primary, fallbacks in order, support)."""
    require_usable(
        session, trust, [selection.primary, *selection.fallbacks, selection.support, selection.advisory]
    )


def _unregistered_hint(model_id: str) -> str:
    if is_replay_model(model_id):
        return (
            f"replay model {model_id!r} has no recordings: the built-in ones are "
            f"{', '.join(BUILT_IN_REPLAY_MODELS)}; register others with "
            f"`specialists models add {model_id} --recordings FILE --actor ID`"
        )
    return (
        f"model {model_id!r} is not registered: add it with "
        f"`specialists models add {model_id} --actor ID` first"
    )


def model_record(row: ModelRow) -> ModelRecord:
    """The contract record of a stored model."""
    # The stored text is the canonical form the signature covers: counted, not checked again.
    recordings = None if row.recordings is None else len(json.loads(row.recordings)["recordings"])
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
        recordings=recordings,
        recordings_sha256=None if row.recordings is None else recordings_sha256(row.recordings),
    )


def _unknown(model_id: str) -> NotFound:
    return NotFound("unknown_model", f"model {model_id!r} is not registered: add it with `models add`")


def _duplicate(model_id: str) -> Refused:
    return Refused("duplicate_model", f"model {model_id!r} is already registered")
