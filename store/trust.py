"""Signed configuration records and the chain of trust behind them (docs/architecture.md
"Configuration").

Every configuration row — an actor, an actor's key, a policy write, a model, a model selection, a
repository — carries its signer's Ed25519 signature over its canonical content
(:func:`contracts.identity.canonical_record`: kind, id, content, signer, key, time). A row is
**verified** when:

* it is signed with a key whose own record is verified, that belongs to the signer, that was the
  signer's key in force when the row was signed (added before, not yet replaced by a newer key), and
  the signer was active then (not deactivated before the signing time);
* an actor key is verified the same way, by the key that authorised it (the registering actor's, or
  the actor's previous key for a rotation), down to the **trust root**: the one self-signed key that is
  either the fingerprint pinned in ``SPECIALISTS_TRUST_ROOT`` or carries the HMAC of the deployment's
  action token (:class:`contracts.identity.TrustAnchor`).

The signatures form a tree rooted outside the database, so a row written by anyone without a key
(an edit, an insert, a signature copied from another row) is not verified; the store refuses to use
it (:class:`ConfigurationUnverified`, code ``configuration_unverified``). Deactivation is checked one
level deep (the signer's own actor row must carry a signature by a key on the chain), which keeps the
check free of cycles: actors register and deactivate one another.

No I/O of its own: :class:`Trust` works on the rows it is given (plain rows or ORM objects).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import Table, select
from sqlalchemy.orm import Session

from contracts.errors import NotFound, Refused
from contracts.identity import (
    RecordKind,
    Signer,
    TrustAnchor,
    anchor_matches,
    canonical_record,
    canonical_time,
    delegation_problem,
    fingerprint_of,
    verify_signature,
)
from contracts.proofs import PROOF_CLOCK_SKEW, SessionDelegation
from contracts.recordings import recordings_sha256
from contracts.refusals import RefusalCode
from store.action_token import TRUST_ANCHOR_FIX
from store.schema import ActorKeyRow, ActorRow, SessionKeyRow

_ACTORS: Table = ActorRow.__table__  # type: ignore[assignment]
_KEYS: Table = ActorKeyRow.__table__  # type: ignore[assignment]
_ALL_ACTORS: Final = select(_ACTORS)
_ALL_KEYS: Final = select(_KEYS)
_SESSIONS: Table = SessionKeyRow.__table__  # type: ignore[assignment]
_ALL_SESSIONS: Final = select(_SESSIONS)

NO_SIGNATURE: Final = "it carries no signature"


def _time(value: dt.datetime | None) -> str | None:
    return None if value is None else canonical_time(value)


# ------------------------------------------------------------------------------------ record content


def actor_content(row: Any) -> dict[str, Any]:
    return {
        "name": row.name,
        "registered_by": row.registered_by,
        "registered_at": _time(row.registered_at),
        "active": bool(row.active),
        "deactivated_by": row.deactivated_by,
        "deactivated_at": _time(row.deactivated_at),
    }


def actor_key_content(row: Any) -> dict[str, Any]:
    return {"actor_id": row.actor_id, "public_key": row.public_key, "added_at": _time(row.added_at)}


def policy_content(row: Any) -> dict[str, Any]:
    return {
        "mode": row.mode,
        "maximum_automatic_tier": row.maximum_automatic_tier,
        "set_by": row.set_by,
        "set_at": _time(row.set_at),
    }


def selection_content(row: Any) -> dict[str, Any]:
    content = {
        "primary": row.primary,
        "fallbacks": list(row.fallbacks),
        "fallback_mode": row.fallback_mode,
        "support": row.support,
        "selected_by": row.selected_by,
        "selected_at": _time(row.selected_at),
    }
    if row.efforts:  # signed only when set: rows from before efforts keep their signatures
        content["efforts"] = dict(row.efforts)
    if row.advisory:  # signed only when set, as efforts
        content["advisory"] = row.advisory
    return content


def model_content(row: Any) -> dict[str, Any]:
    return {
        "provider": row.provider,
        "name": row.name,
        "base_url": row.base_url,
        "api_key_env": row.api_key_env,
        "timeout_s": row.timeout_s,
        "ceiling": row.ceiling,
        "added_by": row.added_by,
        "added_at": _time(row.added_at),
        "active": bool(row.active),
        "deactivated_by": row.deactivated_by,
        "deactivated_at": _time(row.deactivated_at),
        # Only a registered replay model has recordings: the other records' canonical form (and
        # the signatures made over it before recordings existed) is unchanged.
        **({} if row.recordings is None else {"recordings_sha256": recordings_sha256(row.recordings)}),
    }


def repository_content(row: Any) -> dict[str, Any]:
    return {
        "path": row.path,
        "default_branch": row.default_branch,
        "added_by": row.added_by,
        "added_at": _time(row.added_at),
        "config": row.config,
        "active": bool(row.active),
        "deactivated_by": row.deactivated_by,
        "deactivated_at": _time(row.deactivated_at),
    }


@dataclass(frozen=True)
class _Spec:
    record_id: Callable[[Any], str]
    content: Callable[[Any], dict[str, Any]]


SPECS: Final[Mapping[RecordKind, _Spec]] = {
    RecordKind.ACTOR: _Spec(lambda row: str(row.id), actor_content),
    RecordKind.ACTOR_KEY: _Spec(lambda row: str(row.fingerprint), actor_key_content),
    RecordKind.POLICY: _Spec(lambda row: str(row.id), policy_content),
    RecordKind.MODEL: _Spec(lambda row: str(row.id), model_content),
    RecordKind.MODEL_SELECTION: _Spec(lambda row: str(row.id), selection_content),
    RecordKind.REPOSITORY: _Spec(lambda row: str(row.alias), repository_content),
}


def record_id(kind: RecordKind, row: Any) -> str:
    """The id a record of ``kind`` is signed under (an actor's id, a key's fingerprint, a policy or
    selection write's number, a model id, a repository alias)."""
    return SPECS[kind].record_id(row)


def record_message(kind: RecordKind, row: Any) -> bytes | None:
    """The canonical bytes the row's signature covers; ``None`` when the row names no signer."""
    if row.signed_by is None or row.signed_key is None or row.signed_at is None:
        return None
    spec = SPECS[kind]
    return canonical_record(
        kind,
        spec.record_id(row),
        spec.content(row),
        signed_by=row.signed_by,
        signed_key=row.signed_key,
        signed_at=row.signed_at,
    )


def sign_row(kind: RecordKind, row: Any, signer: Signer, at: dt.datetime) -> None:
    """Sign the ORM object ``row`` (every content column already set) as ``signer`` at ``at``."""
    row.signed_by = signer.actor_id
    row.signed_key = signer.fingerprint
    row.signed_at = at
    message = record_message(kind, row)
    assert message is not None
    row.signature = signer.sign(message)


# ------------------------------------------------------------------------------------------ refusals


@dataclass(frozen=True)
class Problem:
    """Why one record is not verified."""

    kind: RecordKind
    record_id: str
    reason: str

    def describe(self) -> str:
        return f"{self.kind.label} {self.record_id!r}: {self.reason}"


class ConfigurationUnverified(Refused):
    """A configuration record carries no valid signature: it is not used (exit 4). ``problems`` names
    every record at fault."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems = tuple(problems)
        unsigned = any(problem.reason == NO_SIGNATURE for problem in self.problems)
        hint = (
            "records written before signed configuration are used once an actor has reviewed and "
            "signed them (`specialists configuration attest --actor ID`)"
            if unsigned
            else "a row changed outside specialists is never used: restore it or remove it"
        )
        described = "; ".join(problem.describe() for problem in self.problems)
        super().__init__(
            RefusalCode.CONFIGURATION_UNVERIFIED,
            f"configuration not verified, so it is not used: {described} ({hint})",
        )


def trust_root_not_configured() -> Refused:
    """The refusal of a process with no trust anchor, saying how to give it one."""
    return Refused(
        RefusalCode.TRUST_ROOT_NOT_CONFIGURED,
        f"signed configuration cannot be verified here, as this process has no trust anchor: "
        f"{TRUST_ANCHOR_FIX}",
    )


# --------------------------------------------------------------------------------------------- trust


@dataclass(frozen=True)
class ActorState:
    """An actor as the chain of trust sees it: its row (verified), whether it is active, its key in
    force (``None``: none verified) and every verified key, oldest first."""

    row: Any
    active: bool
    current_key: Any | None
    keys: tuple[Any, ...]


class Trust:
    """The verified view of the actors and their keys, read in one session; checks other records.

    Build a new one after writing actors or keys in the same session (it reads them once)."""

    def __init__(self, session: Session, anchor: TrustAnchor) -> None:
        self._anchor = anchor
        self._actors: dict[str, Any] = {row.id: row for row in session.execute(_ALL_ACTORS)}
        self._keys: dict[str, Any] = {row.fingerprint: row for row in session.execute(_ALL_KEYS)}
        self._sessions: dict[str, Any] = {row.fingerprint: row for row in session.execute(_ALL_SESSIONS)}
        self._by_actor: dict[str, list[Any]] = {}
        for key in sorted(self._keys.values(), key=lambda k: (k.added_at, k.fingerprint)):
            self._by_actor.setdefault(key.actor_id, []).append(key)
        self._chain: dict[str, bool] = {}
        self._key_problems: dict[str, str | None] = {}
        self._basic: dict[str, bool] = {}

    # Reading

    @property
    def actor_rows(self) -> dict[str, Any]:
        return self._actors

    def key_row(self, fingerprint: str) -> Any | None:
        return self._keys.get(fingerprint)

    def keys_of(self, actor_id: str) -> list[Any]:
        """Every key row of ``actor_id`` (verified or not), oldest first."""
        return list(self._by_actor.get(actor_id, ()))

    # The chain (signatures only)

    def _signature_ok(self, kind: RecordKind, row: Any, public_key: str) -> bool:
        message = record_message(kind, row)
        return (
            message is not None
            and row.signature is not None
            and verify_signature(public_key, row.signature, message)
        )

    def _root_ok(self, key: Any) -> bool:
        """Whether the self-signed ``key`` is the deployment's trust root."""
        if self._anchor.root_fingerprint is not None:
            return bool(key.fingerprint == self._anchor.root_fingerprint)
        if self._anchor.token is None:
            raise trust_root_not_configured()
        message = record_message(RecordKind.ACTOR_KEY, key)
        return (
            message is not None
            and key.anchor is not None
            and anchor_matches(self._anchor.token, message, key.anchor)
        )

    def chain(self, fingerprint: str) -> bool:
        """Whether the key's signatures lead back to the trust root (nothing else checked)."""
        known = self._chain.get(fingerprint)
        if known is not None:
            return known
        self._chain[fingerprint] = False  # a cycle proves nothing
        key = self._keys.get(fingerprint)
        result = False
        if key is not None and key.signed_key is not None:
            if key.signed_key == key.fingerprint:
                result = (
                    key.signed_by == key.actor_id
                    and self._signature_ok(RecordKind.ACTOR_KEY, key, key.public_key)
                    and self._root_ok(key)
                )
            else:
                signer = self._keys.get(key.signed_key)
                result = (
                    signer is not None
                    and signer.actor_id == key.signed_by
                    and self._signature_ok(RecordKind.ACTOR_KEY, key, signer.public_key)
                    and self.chain(signer.fingerprint)
                )
        self._chain[fingerprint] = result
        return result

    def _basic_actor(self, actor_id: str) -> bool:
        """Whether the actor's row carries a signature by a key on the chain of its signer."""
        known = self._basic.get(actor_id)
        if known is not None:
            return known
        row = self._actors.get(actor_id)
        result = False
        if row is not None and row.signed_key is not None:
            key = self._keys.get(row.signed_key)
            result = (
                key is not None
                and key.actor_id == row.signed_by
                and self._signature_ok(RecordKind.ACTOR, row, key.public_key)
                and self.chain(key.fingerprint)
            )
        self._basic[actor_id] = result
        return result

    def _active_at(self, actor_id: str, at: dt.datetime) -> bool:
        """Whether ``actor_id`` was registered and not yet deactivated at ``at`` (as its own signed row
        says)."""
        row = self._actors.get(actor_id)
        if row is None or not self._basic_actor(actor_id):
            return False
        return bool(row.active) or (row.deactivated_at is not None and row.deactivated_at >= at)

    def _in_force_at(self, key: Any, at: dt.datetime, *, exclude: str | None = None) -> bool:
        """Whether ``key`` was its actor's key in force at ``at``: added by then, and no newer key
        on the chain added by then (``exclude``: the record being checked, when it is a key)."""
        if key.added_at > at:
            return False
        return not any(
            other.fingerprint not in (key.fingerprint, exclude)
            and key.added_at < other.added_at <= at
            and self.chain(other.fingerprint)
            for other in self._by_actor.get(key.actor_id, ())
        )

    # Full verification

    def session_problem(self, fingerprint: str) -> str | None:
        """Why the session key ``fingerprint`` is not a verified delegation, or ``None``: its actor's
        key in force at its start signed it, over a window of at most
        :data:`contracts.identity.MAX_SESSION`, while the actor was active."""
        row = self._sessions.get(fingerprint)
        if row is None:
            return "no such session key"
        key = self._keys.get(row.actor_key)
        if key is None or key.actor_id != row.actor_id:
            return f"its delegation names key {row.actor_key[:16]}…, which {row.actor_id!r} does not hold"
        if fingerprint_of(row.public_key) != fingerprint:
            return "its fingerprint is not its public key's"
        key_problem = self.key_problem(key.fingerprint)
        if key_problem is not None:
            return f"the key that delegated it is not verified ({key_problem})"
        delegation = SessionDelegation(
            actor=row.actor_id,
            actor_key=row.actor_key,
            session_key=row.public_key,
            issued_at=row.issued_at,
            expires_at=row.expires_at,
            signature=row.signature,
        )
        problem = delegation_problem(delegation, key.public_key)
        if problem is not None:
            return f"its delegation does not verify ({problem})"
        # In force when the session began (or, for a key added moments after its challenge was
        # made, when it was added): not already replaced by a newer key.
        if not self._in_force_at(key, max(row.issued_at, key.added_at)):
            return f"the key that delegated it was not the key of {row.actor_id!r} in force at its start"
        if not self._active_at(row.actor_id, row.issued_at):
            return f"{row.actor_id!r} was not an active actor at its start"
        return None

    def _session_signed_problem(self, kind: RecordKind, row: Any, session: Any) -> str:
        """Why ``row``, signed with the session key ``session``, is not verified ('' when it is)."""
        if session.actor_id != row.signed_by:
            return (
                f"it names {row.signed_by!r} as its signer but is signed with a session of "
                f"{session.actor_id!r}"
            )
        if not self._signature_ok(kind, row, session.public_key):
            return "its signature does not verify (the row was changed after it was signed)"
        problem = self.session_problem(session.fingerprint)
        if problem is not None:
            return f"the session key it is signed with is not verified ({problem})"
        if not session.issued_at - PROOF_CLOCK_SKEW <= row.signed_at < session.expires_at:
            return "it was signed outside its session key's window"
        key = self._keys[session.actor_key]
        if not self._in_force_at(key, row.signed_at):
            return (
                f"the key that delegated its session was not the key of {row.signed_by!r} in force "
                "when it was signed"
            )
        if not self._active_at(row.signed_by, row.signed_at):
            return f"its signer {row.signed_by!r} was not an active actor at its signing time"
        return ""

    def _signed_problem(self, kind: RecordKind, row: Any, *, exclude: str | None = None) -> str | None:
        """Why ``row`` (not a root key) is not verified, or ``None``."""
        if row.signature is None or row.signed_key is None or row.signed_by is None or row.signed_at is None:
            return NO_SIGNATURE
        key = self._keys.get(row.signed_key)
        session = self._sessions.get(row.signed_key) if kind is not RecordKind.ACTOR_KEY else None
        if key is None and session is not None:
            return self._session_signed_problem(kind, row, session) or None
        if key is None:
            return f"it is signed with key {row.signed_key[:16]}…, which no actor holds"
        if key.actor_id != row.signed_by:
            return f"it names {row.signed_by!r} as its signer but is signed with a key of {key.actor_id!r}"
        if not self._signature_ok(kind, row, key.public_key):
            return "its signature does not verify (the row was changed after it was signed)"
        key_problem = self.key_problem(key.fingerprint)
        if key_problem is not None:
            return f"the key it is signed with is not verified ({key_problem})"
        if not self._in_force_at(key, row.signed_at, exclude=exclude):
            return f"it is signed with a key of {row.signed_by!r} that was not in force at its signing time"
        if not self._active_at(row.signed_by, row.signed_at):
            return f"its signer {row.signed_by!r} was not an active actor at its signing time"
        return None

    def key_problem(self, fingerprint: str) -> str | None:
        """Why the key ``fingerprint`` is not verified, or ``None``."""
        if fingerprint in self._key_problems:
            return self._key_problems[fingerprint]
        self._key_problems[fingerprint] = "its signatures form a cycle"
        key = self._keys.get(fingerprint)
        problem: str | None
        if key is None:
            problem = "no such key"
        elif key.signed_key is not None and key.signed_key == key.fingerprint:
            if key.signed_by != key.actor_id or not self._signature_ok(
                RecordKind.ACTOR_KEY, key, key.public_key
            ):
                problem = "its self-signature does not verify"
            elif not self._root_ok(key):
                problem = "it is self-signed but is not the deployment's trust root " + (
                    "(SPECIALISTS_TRUST_ROOT names another key)"
                    if self._anchor.root_fingerprint is not None
                    else "(it carries no valid HMAC of this deployment's action token)"
                )
            else:
                problem = None
        else:
            problem = self._signed_problem(RecordKind.ACTOR_KEY, key, exclude=fingerprint)
        self._key_problems[fingerprint] = problem
        return problem

    def problem(self, kind: RecordKind, row: Any) -> Problem | None:
        """Why the record ``row`` of ``kind`` is not verified, or ``None`` when it is."""
        if kind is RecordKind.ACTOR_KEY:
            reason = self.key_problem(row.fingerprint)
        else:
            reason = self._signed_problem(kind, row)
        return None if reason is None else Problem(kind, record_id(kind, row), reason)

    def require(self, kind: RecordKind, rows: Iterable[Any]) -> None:
        """Raise :class:`ConfigurationUnverified` naming every row of ``rows`` that is not verified."""
        problems = [problem for row in rows if (problem := self.problem(kind, row)) is not None]
        if problems:
            raise ConfigurationUnverified(problems)

    # Actors

    def verified_keys(self, actor_id: str) -> list[Any]:
        """The verified keys of ``actor_id``, oldest first."""
        return [key for key in self._by_actor.get(actor_id, ()) if self.key_problem(key.fingerprint) is None]

    def actor(self, actor_id: str) -> ActorState | None:
        """The verified state of ``actor_id``; ``None`` when it is not registered. Raises
        :class:`ConfigurationUnverified` when its row is not verified."""
        row = self._actors.get(actor_id)
        if row is None:
            return None
        self.require(RecordKind.ACTOR, [row])
        keys = tuple(self.verified_keys(actor_id))
        return ActorState(row=row, active=bool(row.active), current_key=keys[-1] if keys else None, keys=keys)

    def require_signer(self, signer: Signer, at: dt.datetime | None = None) -> ActorState:
        """The signer's state when it may sign now: registered, verified, active, and acting with its
        key in force. Raises ``unknown_actor`` (not found), ``configuration_unverified``,
        ``actor_deactivated``, ``actor_key_retired`` or ``actor_key_mismatch`` (refused)."""
        state = self.actor(signer.actor_id)
        if state is None:
            raise NotFound(
                RefusalCode.UNKNOWN_ACTOR,
                f"actor {signer.actor_id!r} is not registered: a registered actor must register it first",
            )
        if not state.active:
            raise Refused(
                RefusalCode.ACTOR_DEACTIVATED,
                f"actor {signer.actor_id!r} was deactivated by {state.row.deactivated_by} at "
                f"{_time(state.row.deactivated_at)}: it can no longer act",
            )
        if self._session_in_force(state, signer.fingerprint, at or dt.datetime.now(dt.UTC)):
            return state
        mismatch = self.key_mismatch(state, signer.fingerprint)
        if mismatch is not None:
            raise Refused(*mismatch)
        return state

    def _session_in_force(self, state: ActorState, fingerprint: str, at: dt.datetime) -> bool:
        """Whether ``fingerprint`` is a verified session key of the actor ``state``, delegated by its
        key in force, and ``at`` is inside its window (a rotation of the actor's key ends it)."""
        row = self._sessions.get(fingerprint)
        return (
            row is not None
            and row.actor_id == state.row.id
            and state.current_key is not None
            and row.actor_key == state.current_key.fingerprint
            and self.session_problem(fingerprint) is None
            and row.issued_at - PROOF_CLOCK_SKEW <= at < row.expires_at
        )

    def key_mismatch(self, state: ActorState, fingerprint: str) -> tuple[str, str] | None:
        """``(code, message)`` when ``fingerprint`` is not the key in force of the actor ``state``."""
        actor_id = state.row.id
        if state.current_key is not None and state.current_key.fingerprint == fingerprint:
            return None
        if state.current_key is None:
            return (
                "actor_key_missing",
                f"actor {actor_id!r} holds no verified key: an active actor must attest it "
                "(`specialists configuration attest`)",
            )
        if any(key.fingerprint == fingerprint for key in state.keys):
            return (
                RefusalCode.ACTOR_KEY_RETIRED,
                f"the key {fingerprint[:16]}… is an earlier key of {actor_id!r}, replaced by "
                f"{state.current_key.fingerprint[:16]}…: use the current key file",
            )
        holder = self._keys.get(fingerprint)
        if holder is not None:
            return (
                "actor_key_mismatch",
                f"the key {fingerprint[:16]}… is not the key of {actor_id!r}: it belongs to "
                f"{holder.actor_id!r}; set SPECIALISTS_ACTOR_KEY_FILE to the key file of {actor_id!r}",
            )
        return (
            "actor_key_mismatch",
            f"the key {fingerprint[:16]}… is not the key of {actor_id!r} (no actor holds it): set "
            f"SPECIALISTS_ACTOR_KEY_FILE to the key file of {actor_id!r}",
        )

    def retired_at(self, key: Any) -> dt.datetime | None:
        """When a newer verified key replaced ``key`` (``None``: it is in force)."""
        newer = [
            other.added_at
            for other in self.verified_keys(key.actor_id)
            if (other.added_at, other.fingerprint) > (key.added_at, key.fingerprint)
        ]
        return min(newer) if newer else None
