"""Encrypted history: the AES-256-GCM payload codec every client and worker of a deployment uses when
``SPECIALISTS_CODEC_KEYS_FILE`` is set, and the key file it reads (docs/architecture.md "Encrypted
history").

Each payload is replaced by one whose data is ``nonce (12 bytes) || ciphertext || tag`` of the whole
original payload (its serialized proto, metadata included) and whose metadata says
``encoding: binary/encrypted``, the cipher and the key id; the key id is bound as associated data. A
payload without that encoding decodes unchanged, so histories recorded before encryption still read.
Decoding picks the key by the id the payload names, so rotation is adding a key and later making it
current while the old ones stay for decryption.

No message here ever contains key material: errors name the setting, the file and the key id.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import os
import re
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from temporalio.api.common.v1 import Payload
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import (
    DataConverter,
    DefaultFailureConverterWithEncodedAttributes,
    PayloadCodec,
)

from contracts.errors import InvalidInput, VerificationFailed
from runtime.settings import ENV_CODEC_KEYS_FILE, Settings

ENCODING: Final = b"binary/encrypted"
"""The ``encoding`` metadata value of an encrypted payload."""
CIPHER: Final = b"AES-256-GCM"
META_ENCODING: Final = "encoding"
META_KEY_ID: Final = "encryption-key-id"
META_CIPHER: Final = "encryption-cipher"
NONCE_BYTES: Final = 12
KEY_BYTES: Final = 32
TAG_BYTES: Final = 16
ASSOCIATED_DATA_PREFIX: Final = b"specialists/payload-codec/v1\x00"
"""The associated data is this prefix and the key id: a payload moved under another key id (or
another scheme's ciphertext) fails its tag."""

KEY_ID_PATTERN: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
"""A key id: a letter or digit, then letters, digits and ``. _ -``; at most 64 characters."""
MAX_KEYS_FILE_BYTES: Final = 64 * 1024


class CodecError(VerificationFailed):
    """A payload that claims to be encrypted cannot be decrypted: ``codec_key_unknown`` (this process
    does not hold the key it names) or ``codec_payload_invalid`` (the tag failed: the payload was
    altered, or it was encrypted under other key material with the same id). Exit 6 in the CLI."""


@dataclass(frozen=True, slots=True)
class KeyRing:
    """The deployment's payload keys by id and the one new payloads are encrypted with."""

    current: str
    keys: Mapping[str, bytes] = dataclasses.field(repr=False)

    def __post_init__(self) -> None:
        if self.current not in self.keys:
            raise ValueError("the current key id is not among the keys")

    def __repr__(self) -> str:  # never the keys, whatever prints this
        return f"KeyRing(current={self.current!r}, ids={sorted(self.keys)!r})"


def _associated_data(key_id: str) -> bytes:
    return ASSOCIATED_DATA_PREFIX + key_id.encode("ascii")


class EncryptionCodec(PayloadCodec):
    """AES-256-GCM over whole payloads with the :class:`KeyRing`'s keys (see the module docstring)."""

    def __init__(self, ring: KeyRing) -> None:
        self._current = ring.current
        self._ciphers = {key_id: AESGCM(key) for key_id, key in ring.keys.items()}

    @property
    def current_key_id(self) -> str:
        """The id new payloads are encrypted under."""
        return self._current

    async def encode(self, payloads: Sequence[Payload]) -> list[Payload]:
        """Every payload encrypted under the current key, each with a fresh random nonce."""
        return [self.encrypt(payload) for payload in payloads]

    async def decode(self, payloads: Sequence[Payload]) -> list[Payload]:
        """Encrypted payloads decrypted with the key they name; any other payload unchanged.

        Raises :class:`CodecError` naming the key id for an unknown key or a failed tag."""
        return [self.decrypt(payload) for payload in payloads]

    def encrypt(self, payload: Payload) -> Payload:
        """One payload encrypted under the current key."""
        nonce = os.urandom(NONCE_BYTES)
        sealed = self._ciphers[self._current].encrypt(
            nonce, payload.SerializeToString(deterministic=True), _associated_data(self._current)
        )
        return Payload(
            metadata={
                META_ENCODING: ENCODING,
                META_KEY_ID: self._current.encode("ascii"),
                META_CIPHER: CIPHER,
            },
            data=nonce + sealed,
        )

    def decrypt(self, payload: Payload) -> Payload:
        """One payload decrypted (unchanged when it is not encrypted)."""
        if payload.metadata.get(META_ENCODING) != ENCODING:
            return payload
        raw_id = payload.metadata.get(META_KEY_ID, b"")
        key_id = raw_id.decode("ascii", errors="replace")
        if not raw_id or not KEY_ID_PATTERN.fullmatch(key_id):
            raise CodecError(
                "codec_payload_invalid", "an encrypted payload carries no valid encryption-key-id"
            )
        cipher = self._ciphers.get(key_id)
        if cipher is None:
            raise CodecError(
                "codec_key_unknown",
                f"a payload is encrypted with key {key_id!r}, which {ENV_CODEC_KEYS_FILE} does not "
                "hold: add that key to the file (keep old keys for as long as histories use them)",
            )
        if payload.metadata.get(META_CIPHER, CIPHER) != CIPHER:
            raise CodecError(
                "codec_payload_invalid", f"a payload under key {key_id!r} names an unknown cipher"
            )
        data = payload.data
        if len(data) < NONCE_BYTES + TAG_BYTES:
            raise CodecError("codec_payload_invalid", f"a payload encrypted with key {key_id!r} is truncated")
        try:
            plain = cipher.decrypt(data[:NONCE_BYTES], data[NONCE_BYTES:], _associated_data(key_id))
        except InvalidTag:
            raise CodecError(
                "codec_payload_invalid",
                f"a payload encrypted with key {key_id!r} failed authentication: it was altered, or "
                f"the key {key_id!r} in {ENV_CODEC_KEYS_FILE} is not the one it was encrypted with",
            ) from None
        return Payload.FromString(plain)


# ---------------------------------------------------------------------------------------- key file


def _bad(code: str, detail: str, path: Path) -> InvalidInput:
    return InvalidInput(code, f"{ENV_CODEC_KEYS_FILE}={str(path)!r}: {detail}")


def load_key_ring(path: Path) -> KeyRing:
    """Read and validate the keys file at ``path`` (docs/architecture.md "Encrypted history")::

        {"current": "2026-01", "keys": [{"id": "2026-01", "key": "<base64 of 32 bytes>"}, ...]}

    Raises :class:`InvalidInput` naming ``SPECIALISTS_CODEC_KEYS_FILE``, one code per fault:
    ``codec_keys_unreadable``, ``codec_keys_insecure`` (readable by others, or writable by group or
    others), ``codec_keys_malformed`` (not JSON, or not that shape), ``codec_key_id_invalid``,
    ``codec_key_duplicate``, ``codec_key_invalid`` (not base64, or not 32 bytes) and
    ``codec_current_missing``. No message contains key material.
    """
    return parse_key_ring(_read_keys_file(path), path)


def _read_keys_file(path: Path) -> Any:
    try:
        info = path.stat()
    except OSError as error:
        raise _bad("codec_keys_unreadable", str(error.strerror), path) from None
    if not stat.S_ISREG(info.st_mode):
        raise _bad("codec_keys_unreadable", "not a regular file", path)
    if info.st_mode & 0o027:
        raise _bad(
            "codec_keys_insecure",
            f"mode {stat.S_IMODE(info.st_mode):04o} lets others read it or others write it: run "
            f"`chmod 600 {path}` (0640 or 0440 are accepted too)",
            path,
        )
    if info.st_size > MAX_KEYS_FILE_BYTES:
        raise _bad("codec_keys_unreadable", f"larger than {MAX_KEYS_FILE_BYTES} bytes", path)
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as error:
        raise _bad("codec_keys_unreadable", str(error.strerror), path) from None
    except UnicodeDecodeError:
        raise _bad("codec_keys_malformed", "not UTF-8 text", path) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        # The decoder's message says what it expected and where; it quotes none of the text.
        raise _bad(
            "codec_keys_malformed",
            f"not JSON ({error.msg} at line {error.lineno} column {error.colno})",
            path,
        ) from None


_SHAPE: Final = 'expected {"current": ID, "keys": [{"id": ID, "key": BASE64}, ...]}'


def parse_key_ring(data: Any, path: Path) -> KeyRing:
    """Validate parsed keys-file ``data`` (see :func:`load_key_ring`); ``path`` is only named."""
    if not isinstance(data, dict) or set(data) != {"current", "keys"}:
        raise _bad("codec_keys_malformed", _SHAPE, path)
    entries = data["keys"]
    if not isinstance(entries, list) or not entries:
        raise _bad("codec_keys_malformed", f"keys must be a non-empty list; {_SHAPE}", path)
    keys: dict[str, bytes] = {}
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict) or set(entry) != {"id", "key"}:
            raise _bad("codec_keys_malformed", f"keys[{index}] must be {{id, key}} and nothing else", path)
        key_id = _key_id(entry["id"], f"keys[{index}].id", path)
        if key_id in keys:
            raise _bad("codec_key_duplicate", f"key id {key_id!r} appears more than once", path)
        keys[key_id] = _key_bytes(entry["key"], key_id, path)
    current = _key_id(data["current"], "current", path)
    if current not in keys:
        raise _bad("codec_current_missing", f"the current key {current!r} is not among the keys", path)
    return KeyRing(current=current, keys=keys)


def _key_id(value: Any, where: str, path: Path) -> str:
    if not isinstance(value, str) or not KEY_ID_PATTERN.fullmatch(value):
        shown = repr(value) if isinstance(value, str) and len(value) <= 80 else "the value"
        code = "codec_current_missing" if where == "current" and not value else "codec_key_id_invalid"
        raise _bad(
            code,
            f"{where}: {shown} is not a key id (a letter or digit, then letters, digits and . _ -; "
            "at most 64 characters)",
            path,
        )
    return value


def _key_bytes(value: Any, key_id: str, path: Path) -> bytes:
    if not isinstance(value, str):
        raise _bad("codec_key_invalid", f"key {key_id!r}: the key must be a base64 string", path)
    try:
        key = base64.b64decode(value.strip(), validate=True)
    except (binascii.Error, ValueError):
        raise _bad("codec_key_invalid", f"key {key_id!r}: the key is not valid base64", path) from None
    if len(key) != KEY_BYTES:
        raise _bad(
            "codec_key_invalid",
            f"key {key_id!r}: the key must be {KEY_BYTES} bytes (AES-256), not {len(key)}",
            path,
        )
    return key


def new_key() -> str:
    """A fresh random key for the keys file: base64 of 32 bytes from the operating system."""
    return base64.b64encode(os.urandom(KEY_BYTES)).decode("ascii")


def key_ring_json(ring: KeyRing) -> str:
    """``ring`` as the keys file holds it (key material included: for writing the file only)."""
    data = {
        "current": ring.current,
        "keys": [
            {"id": key_id, "key": base64.b64encode(key).decode("ascii")} for key_id, key in ring.keys.items()
        ],
    }
    return json.dumps(data, indent=2) + "\n"


# ----------------------------------------------------------------------------------- data converter


def payload_codec(settings: Settings) -> EncryptionCodec | None:
    """The codec for ``settings`` (``None`` when no keys file is configured: payloads stay plain)."""
    if settings.codec_keys_file is None:
        return None
    return EncryptionCodec(load_key_ring(settings.codec_keys_file))


def data_converter(settings: Settings) -> DataConverter:
    """The data converter every client and worker of this deployment uses: the pydantic converter,
    with the encryption codec (and failure messages and stack traces moved into an encoded payload,
    so they are encrypted too) when ``SPECIALISTS_CODEC_KEYS_FILE`` is set."""
    codec = payload_codec(settings)
    return converter_with(codec)


def converter_with(codec: PayloadCodec | None) -> DataConverter:
    """The pydantic data converter with ``codec`` (unchanged for ``None``)."""
    if codec is None:
        return pydantic_data_converter
    return dataclasses.replace(
        pydantic_data_converter,
        payload_codec=codec,
        failure_converter_class=DefaultFailureConverterWithEncodedAttributes,
    )
