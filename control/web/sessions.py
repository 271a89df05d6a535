"""Sign-in and sessions of Mission Control (docs/architecture.md "Mission Control").

A person signs in without their private key ever reaching the console:

1. the sign-in page shows a *challenge*: a fresh session public key and the session's window, made
   by :meth:`Sessions.challenge` (the session's private key stays in this process's memory);
2. on their own machine the person runs ``specialists web sign-in CHALLENGE --actor ID``, which signs
   a :class:`~contracts.proofs.SessionDelegation` to that key with their own key and prints it as a
   token;
3. they paste the token into the page; :meth:`Sessions.complete` checks that it delegates to a
   challenge this console made, signed by the actor's key in force (``verify``: the store's check),
   and opens a session.

A session knows its actor, the session key, the delegation and its CSRF token; a protected action is
signed with the session key (:meth:`Session.proof`) and the worker verifies the delegation as well as
the action. Everything lives in memory: a restarted console has no sessions and people sign in again.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from pydantic import TypeAdapter, ValidationError

from contracts.errors import InvalidInput, Refused
from contracts.identity import (
    MAX_SESSION,
    ActorKey,
    delegation_in_force,
    delegation_problem,
    sign_delegated_action,
)
from contracts.proofs import ActionProof, PublicKeyText, SessionDelegation

SESSION_LENGTH: Final = dt.timedelta(hours=8)
"""How long a session lasts (the delegation's window; at most :data:`MAX_SESSION`)."""
CHALLENGE_LIFETIME: Final = dt.timedelta(minutes=10)
"""How long a challenge waits for its token."""
MAX_PENDING: Final = 256
MAX_SESSIONS: Final = 256
MAX_TOKEN_CHARS: Final = 4096

assert SESSION_LENGTH <= MAX_SESSION
_PUBLIC_KEY: Final = TypeAdapter(PublicKeyText)


def _encode(data: dict[str, str]) -> str:
    raw = json.dumps(data, sort_keys=True, separators=(",", ":")).encode("ascii")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _decode(text: str, what: str) -> dict[str, object]:
    text = text.strip()
    if not text or len(text) > MAX_TOKEN_CHARS or not text.isascii():
        raise InvalidInput(f"invalid_{what}", f"the {what} is not one this console or the CLI made")
    try:
        data = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    except (ValueError, binascii.Error, RecursionError):
        raise InvalidInput(f"invalid_{what}", f"the {what} is not one this console or the CLI made") from None
    if not isinstance(data, dict):
        raise InvalidInput(f"invalid_{what}", f"the {what} is not one this console or the CLI made")
    return data


@dataclass(frozen=True)
class Challenge:
    """What the person's key is asked to delegate to: a session key and its window."""

    session_key: str
    issued_at: dt.datetime
    expires_at: dt.datetime

    def code(self) -> str:
        """The challenge as one copyable word (``specialists web sign-in CODE``)."""
        return _encode(
            {
                "session_key": self.session_key,
                "issued_at": self.issued_at.isoformat(),
                "expires_at": self.expires_at.isoformat(),
            }
        )

    @classmethod
    def from_code(cls, code: str) -> Challenge:
        """Read a challenge code. Raises :class:`InvalidInput` ``invalid_challenge``."""
        data = _decode(code, "challenge")
        try:
            issued = dt.datetime.fromisoformat(str(data["issued_at"]))
            expires = dt.datetime.fromisoformat(str(data["expires_at"]))
            key = _PUBLIC_KEY.validate_python(data["session_key"])
        except (KeyError, ValueError, ValidationError):
            raise InvalidInput("invalid_challenge", "the challenge is not one Mission Control made") from None
        if issued.tzinfo is None or not issued < expires <= issued + MAX_SESSION:
            raise InvalidInput("invalid_challenge", "the challenge's session window is not valid")
        return cls(key, issued, expires)


def delegation_token(delegation: SessionDelegation) -> str:
    """The token the CLI prints for the person to paste into the sign-in page."""
    return _encode(delegation.model_dump(mode="json"))


def read_delegation_token(token: str) -> SessionDelegation:
    """Read a token. Raises :class:`InvalidInput` ``invalid_token``."""
    data = _decode(token, "token")
    try:
        return SessionDelegation.model_validate(data)
    except ValidationError:
        raise InvalidInput(
            "invalid_token", "the token is not one `specialists web sign-in` printed"
        ) from None


@dataclass
class Session:
    """A signed-in person: their actor id, the session key, the delegation and the CSRF token."""

    session_id: str
    actor: str
    key: ActorKey = field(repr=False)
    delegation: SessionDelegation
    csrf: str = field(repr=False)

    def proof(self, *, action: str, target: str, digest: str = "") -> ActionProof:
        """The session key's fresh proof of ``action`` on ``target`` for this person."""
        return sign_delegated_action(
            self.key,
            self.delegation,
            action=action,
            target=target,
            digest=digest,
            issued_at=dt.datetime.now(dt.UTC),
            nonce=secrets.token_hex(16),
        )


ActorKeyLookup = Callable[[str, str], str]
"""``(actor, key fingerprint) -> public key``: the store's check of the actor's key in force
(:meth:`store.store.Store.action_key`); raises the store's refusals."""


class Sessions:
    """Pending challenges and open sessions, in memory, bounded; thread-safe."""

    def __init__(self, now: Callable[[], dt.datetime] | None = None) -> None:
        self._now = now or (lambda: dt.datetime.now(dt.UTC))
        self._pending: dict[str, tuple[Challenge, ActorKey]] = {}
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()

    def challenge(self) -> Challenge:
        """A new challenge (its session key kept until it is answered or expires)."""
        now = self._now()
        key = ActorKey.generate()
        challenge = Challenge(key.public_key, now, now + SESSION_LENGTH)
        with self._lock:
            self._expire(now)
            if len(self._pending) >= MAX_PENDING:
                oldest = min(self._pending, key=lambda k: self._pending[k][0].issued_at)
                del self._pending[oldest]
            self._pending[key.public_key] = (challenge, key)
        return challenge

    def complete(self, token: str, verify: ActorKeyLookup) -> Session:
        """Open a session from the person's delegation token. Raises :class:`InvalidInput`
        ``invalid_token``, :class:`Refused` ``unknown_challenge`` (not made here, already used or
        expired), ``proof_invalid`` (not signed by the actor's key in force), ``session_expired``,
        or the store's refusals of the actor or key (``unknown_actor``, ``actor_deactivated``,
        ``actor_key_retired``, ``configuration_unverified``, ...)."""
        delegation = read_delegation_token(token)
        now = self._now()
        with self._lock:
            self._expire(now)
            pending = self._pending.get(delegation.session_key)
        if pending is None:
            raise Refused(
                "unknown_challenge", "this sign-in is not one this console is waiting for: start again"
            )
        challenge, key = pending
        if (delegation.issued_at, delegation.expires_at) != (challenge.issued_at, challenge.expires_at):
            raise Refused("proof_invalid", "the token was made for another session window")
        public_key = verify(delegation.actor, delegation.actor_key)
        problem = delegation_problem(delegation, public_key)
        if problem is not None:
            raise Refused("proof_invalid", problem)
        if not delegation_in_force(delegation, now):
            raise Refused("session_expired", "the session's window is over: sign in again")
        session = Session(
            session_id=secrets.token_urlsafe(32),
            actor=delegation.actor,
            key=key,
            delegation=delegation,
            csrf=secrets.token_urlsafe(32),
        )
        with self._lock:
            if self._pending.pop(delegation.session_key, None) is None:
                raise Refused("unknown_challenge", "this sign-in was already used: start again")
            if len(self._sessions) >= MAX_SESSIONS:
                oldest = min(self._sessions, key=lambda k: self._sessions[k].delegation.issued_at)
                del self._sessions[oldest]
            self._sessions[session.session_id] = session
        return session

    def get(self, session_id: str) -> Session | None:
        """The open session ``session_id``, or ``None`` (unknown, signed out or over)."""
        now = self._now()
        with self._lock:
            session = self._sessions.get(session_id)
            if session is not None and not delegation_in_force(session.delegation, now):
                del self._sessions[session_id]
                return None
            return session

    def end(self, session_id: str) -> None:
        """Sign out: the session and its key are forgotten."""
        with self._lock:
            self._sessions.pop(session_id, None)

    def _expire(self, now: dt.datetime) -> None:
        for public_key, (challenge, _key) in list(self._pending.items()):
            if now >= challenge.issued_at + CHALLENGE_LIFETIME:
                del self._pending[public_key]
