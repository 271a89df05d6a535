"""Payload-codec keys for tests (docs/architecture.md "Encrypted history"): fixed, recognisable
32-byte keys by id and a writer of keys files as operators write them."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any

from runtime.codec import EncryptionCodec, KeyRing

KEY_1 = bytes(range(32))
KEY_2 = bytes(range(100, 132))
KEYS = {"key-1": KEY_1, "key-2": KEY_2}


def ring(current: str, *ids: str) -> KeyRing:
    """A ring of the test keys ``ids`` (default: just ``current``) with ``current`` current."""
    return KeyRing(current=current, keys={key_id: KEYS[key_id] for key_id in ids or (current,)})


def codec(current: str, *ids: str) -> EncryptionCodec:
    """The codec of :func:`ring`."""
    return EncryptionCodec(ring(current, *ids))


def keys_document(current: str, *ids: str) -> dict[str, Any]:
    """The keys file's JSON data for the test keys ``ids`` (default: just ``current``)."""
    return {
        "current": current,
        "keys": [
            {"id": key_id, "key": base64.b64encode(KEYS[key_id]).decode()} for key_id in ids or (current,)
        ],
    }


def write_keys_file(path: Path, data: Any, *, mode: int = 0o600) -> Path:
    """Write ``data`` (JSON data, or text as it is) to ``path`` with ``mode``; returns ``path``."""
    text = data if isinstance(data, str) else json.dumps(data)
    path.write_text(text, encoding="utf-8")
    os.chmod(path, mode)
    return path
