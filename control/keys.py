"""A person's actor key on the operator's side (docs/architecture.md "Protected actions").

``SPECIALISTS_ACTOR_KEY_FILE`` names the file holding the key (an unencrypted PKCS #8 PEM Ed25519
private key, written once by ``actors register``, ``actors rotate-key`` or ``configuration attest``),
or ``SPECIALISTS_ACTOR_KEY`` holds the PEM text itself. The file must not be readable or writable by
group or others (mode 0600 or stricter), like the action token's. The key is never logged, stored or
sent: the CLI sends signatures.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from contracts.errors import InvalidInput, Refused
from contracts.identity import MAX_PRIVATE_KEY_BYTES, ActorKey, KeyMaterialError, Signer

KEY_ENV: Final = "SPECIALISTS_ACTOR_KEY"
KEY_FILE_ENV: Final = "SPECIALISTS_ACTOR_KEY_FILE"


def load_actor_key(environ: Mapping[str, str] | None = None) -> ActorKey | None:
    """The configured actor key, or ``None`` when neither variable is set.

    Raises :class:`InvalidInput` (``actor_key_ambiguous`` when both are set, ``actor_key_invalid`` for
    something that is not an Ed25519 private key or cannot be read) and :class:`Refused`
    (``actor_key_file_insecure`` when the file is readable or writable by group or others).
    """
    env = os.environ if environ is None else environ
    value = env.get(KEY_ENV, "")
    file_name = env.get(KEY_FILE_ENV, "")
    if value.strip() and file_name:
        raise InvalidInput("actor_key_ambiguous", f"set only one of {KEY_ENV} and {KEY_FILE_ENV}, not both")
    if file_name:
        return _parsed(_read_key_file(Path(file_name)), f"the key file {file_name!r}")
    if value.strip():
        return _parsed(value.encode("utf-8", errors="replace"), KEY_ENV)
    return None


def require_signer(actor: str, environ: Mapping[str, str] | None = None) -> Signer:
    """``actor`` acting with the configured key. Raises :class:`Refused` ``actor_key_missing`` when
    no key is configured (and what :func:`load_actor_key` raises)."""
    key = load_actor_key(environ)
    if key is None:
        raise Refused(
            "actor_key_missing",
            f"this action is protected: set {KEY_FILE_ENV} to the key file of actor {actor!r} (mode 0600), "
            f"or {KEY_ENV} to its key",
        )
    return Signer(actor, key)


def _read_key_file(path: Path) -> bytes:
    try:
        info = path.stat()
    except OSError as error:
        raise InvalidInput("actor_key_invalid", f"{KEY_FILE_ENV}={str(path)!r}: {error.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise InvalidInput("actor_key_invalid", f"{KEY_FILE_ENV}={str(path)!r} is not a regular file")
    if info.st_mode & 0o077:
        raise Refused(
            "actor_key_file_insecure",
            f"the actor key file {str(path)!r} has mode {stat.S_IMODE(info.st_mode):04o}: others can "
            f"read it; run `chmod 600 {path}`",
        )
    if info.st_size > MAX_PRIVATE_KEY_BYTES:
        raise InvalidInput("actor_key_invalid", f"the actor key file {str(path)!r} is too large")
    try:
        return path.read_bytes()
    except OSError as error:
        raise InvalidInput("actor_key_invalid", f"cannot read the actor key file: {error.strerror}") from None


def _parsed(data: bytes, source: str) -> ActorKey:
    try:
        return ActorKey.from_pem(data)
    except KeyMaterialError as error:
        raise InvalidInput("actor_key_invalid", f"{source} does not hold an actor key: {error}") from None


def default_key_path(actor_id: str) -> Path:
    """Where a new key of ``actor_id`` is written unless a path is given: ``./<id>.key``."""
    return Path.cwd() / f"{actor_id}.key"


def write_key_file(path: Path, key: ActorKey) -> Path:
    """Write ``key`` to a new file ``path`` with mode 0600 (``O_EXCL``: an existing file is never
    overwritten); returns the absolute path. Raises :class:`Refused` ``key_file_exists`` or
    :class:`InvalidInput` ``key_file_invalid`` (the directory is missing or not writable)."""
    target = path.expanduser().absolute()
    try:
        descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        raise Refused(
            "key_file_exists",
            f"{target} exists already: a key file is never overwritten; name a new file with --key-file",
        ) from None
    except OSError as error:
        raise InvalidInput(
            "key_file_invalid", f"cannot create the key file {target}: {error.strerror}"
        ) from None
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(key.to_pem())
    except BaseException:
        target.unlink(missing_ok=True)
        raise
    return target


def remove_key_file(path: Path) -> None:
    """Remove a key file this process just wrote, when what it was written for did not happen."""
    path.unlink(missing_ok=True)
