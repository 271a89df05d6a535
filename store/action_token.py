"""Reading the deployment's action token and trust root (docs/architecture.md "Configuration").

``SPECIALISTS_ACTION_TOKEN`` holds the token, or ``SPECIALISTS_ACTION_TOKEN_FILE`` names a file that
holds it; the file must not be readable or writable by group or others (mode 0600 or stricter). The
token bootstraps the deployment's first actor and, where no trust root is pinned, anchors the chain of
configuration trust; it is never logged, stored or sent (the store keeps only a fingerprint).
``SPECIALISTS_TRUST_ROOT`` pins the trust root instead: the fingerprint of the first actor's first
key, which is public.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from contracts.errors import InvalidInput, Refused
from contracts.identity import FINGERPRINT_PATTERN, TrustAnchor

TRUST_ROOT_ENV: Final = "SPECIALISTS_TRUST_ROOT"
TOKEN_ENV: Final = "SPECIALISTS_ACTION_TOKEN"
TOKEN_FILE_ENV: Final = "SPECIALISTS_ACTION_TOKEN_FILE"
MIN_TOKEN_CHARS: Final = 16
MAX_TOKEN_BYTES: Final = 4096
TRUST_ANCHOR_FIX: Final = (
    f"set {TOKEN_FILE_ENV} to the deployment's action token file (`make demo` writes its own to "
    f".specialists/action-token in the clone) or {TRUST_ROOT_ENV} to the trust root's key fingerprint "
    "(printed when the first actor was registered; `specialists actors --json` shows it as `trust_root`, "
    "but only where one of the two is set already)"
)
"""How to give a process a trust anchor, as every message about a missing one says it."""


def load_action_token(environ: Mapping[str, str] | None = None) -> bytes | None:
    """The configured token, or ``None`` when neither variable is set.

    Raises :class:`InvalidInput` (``action_token_ambiguous`` when both are set, ``action_token_invalid``
    for an empty, too short or unreadable token) and :class:`Refused` (``action_token_file_insecure``
    when the file is readable or writable by group or others).
    """
    env = os.environ if environ is None else environ
    value = env.get(TOKEN_ENV, "")
    file_name = env.get(TOKEN_FILE_ENV, "")
    if value and file_name:
        raise InvalidInput(
            "action_token_ambiguous", f"set only one of {TOKEN_ENV} and {TOKEN_FILE_ENV}, not both"
        )
    if file_name:
        return _read_token_file(Path(file_name))
    if value:
        return _checked(value.strip(), TOKEN_ENV)
    return None


def require_action_token(environ: Mapping[str, str] | None = None) -> bytes:
    """The configured token. Raises :class:`Refused` (``action_token_missing``) when there is none."""
    token = load_action_token(environ)
    if token is None:
        raise Refused(
            "action_token_missing",
            f"this action is protected: set {TOKEN_ENV}, or {TOKEN_FILE_ENV} to a file with mode 0600",
        )
    return token


def _read_token_file(path: Path) -> bytes:
    try:
        info = path.stat()
    except OSError as error:
        raise InvalidInput(
            "action_token_invalid", f"{TOKEN_FILE_ENV}={str(path)!r}: {error.strerror}"
        ) from None
    if not stat.S_ISREG(info.st_mode):
        raise InvalidInput("action_token_invalid", f"{TOKEN_FILE_ENV}={str(path)!r} is not a regular file")
    if info.st_mode & 0o077:
        raise Refused(
            "action_token_file_insecure",
            f"the action token file {str(path)!r} has mode {stat.S_IMODE(info.st_mode):04o}: "
            f"others can read it; run `chmod 600 {path}`",
        )
    if info.st_size > MAX_TOKEN_BYTES:
        raise InvalidInput("action_token_invalid", f"the action token file {str(path)!r} is too large")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise InvalidInput("action_token_invalid", f"cannot read the action token file: {error}") from None
    return _checked(text.strip(), TOKEN_FILE_ENV)


def _checked(token: str, source: str) -> bytes:
    if len(token) < MIN_TOKEN_CHARS:
        raise InvalidInput(
            "action_token_invalid", f"the token from {source} is shorter than {MIN_TOKEN_CHARS} characters"
        )
    return token.encode("utf-8")


def load_trust_root(environ: Mapping[str, str] | None = None) -> str | None:
    """``SPECIALISTS_TRUST_ROOT`` (64 lower-case hex digits), or ``None`` when unset. Raises
    :class:`InvalidInput` ``invalid_setting`` for any other value."""
    env = os.environ if environ is None else environ
    value = env.get(TRUST_ROOT_ENV, "").strip()
    if not value:
        return None
    if not FINGERPRINT_PATTERN.fullmatch(value):
        raise InvalidInput(
            "invalid_setting",
            f"{TRUST_ROOT_ENV} must be the trust root's key fingerprint: 64 lower-case hex digits",
        )
    return value


def load_trust_anchor(environ: Mapping[str, str] | None = None) -> TrustAnchor:
    """The pinned trust root and the action token this process has (either may be ``None``)."""
    return TrustAnchor(root_fingerprint=load_trust_root(environ), token=load_action_token(environ))
