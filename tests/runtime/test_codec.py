"""The payload encryption codec and its keys file (runtime/codec.py; docs/architecture.md "Encrypted
history")."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from temporalio.api.common.v1 import Payload
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DefaultFailureConverterWithEncodedAttributes

from contracts.errors import InvalidInput, VerificationFailed
from runtime.codec import (
    ASSOCIATED_DATA_PREFIX,
    CodecError,
    EncryptionCodec,
    KeyRing,
    data_converter,
    key_ring_json,
    load_key_ring,
    new_key,
)
from runtime.settings import Settings
from tests.codec_keys import KEY_1, KEY_2, KEYS, codec, keys_document, ring, write_keys_file

SECRET_TEXT = b'{"summary":"the index on orders.customer_id is missing"}'


def plain(data: bytes = SECRET_TEXT, encoding: bytes = b"json/plain", **extra: bytes) -> Payload:
    return Payload(metadata={"encoding": encoding, **extra}, data=data)


# ------------------------------------------------------------------------------------------ the codec


async def test_a_payload_round_trips_with_its_metadata_and_the_ciphertext_hides_it() -> None:
    original = plain(messageType=b"contracts.runs.RunView")
    [encrypted] = await codec("key-1").encode([original])

    assert dict(encrypted.metadata) == {
        "encoding": b"binary/encrypted",
        "encryption-key-id": b"key-1",
        "encryption-cipher": b"AES-256-GCM",
    }
    assert SECRET_TEXT not in encrypted.data and b"RunView" not in encrypted.data
    assert len(encrypted.data) == 12 + len(original.SerializeToString()) + 16
    [decoded] = await codec("key-1").decode([encrypted])
    assert decoded == original


async def test_each_payload_gets_a_fresh_nonce_so_equal_payloads_encrypt_differently() -> None:
    first, second = await codec("key-1").encode([plain(), plain()])
    assert first.data[:12] != second.data[:12]
    assert first.data != second.data


async def test_the_ciphertext_is_aes_256_gcm_of_the_serialized_payload_with_the_key_id_bound() -> None:
    original = plain()
    [encrypted] = await codec("key-1").encode([original])
    nonce, sealed = encrypted.data[:12], encrypted.data[12:]
    opened = AESGCM(KEY_1).decrypt(nonce, sealed, ASSOCIATED_DATA_PREFIX + b"key-1")
    assert Payload.FromString(opened) == original


async def test_after_rotation_old_payloads_still_decode_and_new_ones_carry_the_new_key() -> None:
    [under_key_1] = await codec("key-1").encode([plain(b'"before"')])
    rotated = codec("key-2", "key-1", "key-2")
    assert rotated.current_key_id == "key-2"

    [under_key_2] = await rotated.encode([plain(b'"after"')])
    assert under_key_2.metadata["encryption-key-id"] == b"key-2"
    decoded = await rotated.decode([under_key_1, under_key_2])
    assert [p.data for p in decoded] == [b'"before"', b'"after"']


async def test_a_payload_without_the_encrypted_encoding_passes_through_decode_unchanged() -> None:
    recorded_before_encryption = [plain(), plain(b"", encoding=b"binary/null"), Payload()]
    assert await codec("key-1").decode(recorded_before_encryption) == recorded_before_encryption


@pytest.mark.parametrize("where", ["nonce", "ciphertext", "tag"])
async def test_a_tampered_payload_fails_naming_the_key_id(where: str) -> None:
    [encrypted] = await codec("key-1").encode([plain()])
    data = bytearray(encrypted.data)
    data[{"nonce": 0, "ciphertext": 20, "tag": -1}[where]] ^= 0x01
    encrypted.data = bytes(data)

    with pytest.raises(CodecError) as raised:
        await codec("key-1").decode([encrypted])
    assert raised.value.code == "codec_payload_invalid"
    assert "'key-1'" in raised.value.message and "altered" in raised.value.message
    assert isinstance(raised.value, VerificationFailed)


async def test_a_payload_relabelled_with_another_key_id_fails_its_tag() -> None:
    # Both keys are the same bytes: only the key id bound as associated data tells them apart.
    same = EncryptionCodec(KeyRing(current="key-1", keys={"key-1": KEY_1, "key-2": KEY_1}))
    [encrypted] = await same.encode([plain()])
    encrypted.metadata["encryption-key-id"] = b"key-2"
    with pytest.raises(CodecError, match="'key-2' failed authentication"):
        await same.decode([encrypted])


async def test_a_payload_encrypted_with_other_key_material_under_the_same_id_fails() -> None:
    [encrypted] = await codec("key-1").encode([plain()])
    impostor = EncryptionCodec(KeyRing(current="key-1", keys={"key-1": KEY_2}))
    with pytest.raises(CodecError) as raised:
        await impostor.decode([encrypted])
    assert raised.value.code == "codec_payload_invalid"


async def test_an_unknown_key_id_fails_naming_the_key_id_and_the_setting_and_never_a_key() -> None:
    [encrypted] = await codec("key-2").encode([plain()])
    with pytest.raises(CodecError) as raised:
        await codec("key-1").decode([encrypted])
    assert raised.value.code == "codec_key_unknown"
    assert "'key-2'" in raised.value.message
    assert "SPECIALISTS_CODEC_KEYS_FILE" in raised.value.message
    for key in KEYS.values():
        assert base64.b64encode(key).decode() not in raised.value.message


@pytest.mark.parametrize(
    ("metadata", "data", "expected"),
    [
        ({}, b"x" * 40, "no valid encryption-key-id"),
        ({"encryption-key-id": b"bad id!"}, b"x" * 40, "no valid encryption-key-id"),
        ({"encryption-key-id": b"key-1"}, b"x" * 27, "truncated"),
        ({"encryption-key-id": b"key-1", "encryption-cipher": b"ROT13"}, b"x" * 40, "unknown cipher"),
    ],
)
async def test_a_malformed_encrypted_payload_fails_with_a_specific_message(
    metadata: dict[str, bytes], data: bytes, expected: str
) -> None:
    payload = Payload(metadata={"encoding": b"binary/encrypted", **metadata}, data=data)
    with pytest.raises(CodecError, match=expected) as raised:
        await codec("key-1").decode([payload])
    assert raised.value.code == "codec_payload_invalid"


def test_a_key_ring_never_shows_its_keys() -> None:
    shown = repr(ring("key-2", "key-1", "key-2"))
    assert shown == "KeyRing(current='key-2', ids=['key-1', 'key-2'])"


# -------------------------------------------------------------------------------------- the key file


def test_a_keys_file_loads_every_key_and_the_current_one(tmp_path: Path) -> None:
    path = write_keys_file(tmp_path / "keys.json", keys_document("key-2", "key-1", "key-2"))
    loaded = load_key_ring(path)
    assert loaded.current == "key-2"
    assert dict(loaded.keys) == {"key-1": KEY_1, "key-2": KEY_2}


def test_a_written_key_ring_reads_back_and_new_keys_are_32_random_bytes(tmp_path: Path) -> None:
    fresh = base64.b64decode(new_key())
    assert len(fresh) == 32 and fresh != base64.b64decode(new_key())
    original = KeyRing(current="k2", keys={"k1": KEY_1, "k2": fresh})
    path = write_keys_file(tmp_path / "keys.json", key_ring_json(original))
    assert load_key_ring(path) == original


def _entry(key_id: Any, key: Any) -> dict[str, Any]:
    return {"id": key_id, "key": key}


def _file(current: Any, *entries: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"current": current, "keys": list(entries), **more}


GOOD = base64.b64encode(KEY_1).decode()
SHORT = base64.b64encode(b"k" * 16).decode()
A = _entry("a", GOOD)
BAD_FILES: list[tuple[str, Any, str, str]] = [
    # (case, file content, code, a phrase of the message)
    ("not JSON", "{current: 1", "codec_keys_malformed", "not JSON"),
    ("not an object", "[]", "codec_keys_malformed", "expected"),
    ("an unknown field", _file("a", A, x=1), "codec_keys_malformed", "expected"),
    ("no keys", _file("a"), "codec_keys_malformed", "non-empty list"),
    ("an entry with more", _file("a", {**A, "n": 1}), "codec_keys_malformed", "keys[0]"),
    ("wrong length", _file("a", _entry("a", SHORT)), "codec_key_invalid", "32 bytes (AES-256), not 16"),
    ("bad base64", _file("a", _entry("a", "not*base64!")), "codec_key_invalid", "not valid base64"),
    ("a key not a string", _file("a", _entry("a", 12)), "codec_key_invalid", "base64 string"),
    ("duplicate ids", _file("a", A, A), "codec_key_duplicate", "'a' appears more than once"),
    ("missing current", _file("b", A), "codec_current_missing", "'b' is not among the keys"),
    ("empty current", _file("", A), "codec_current_missing", "current"),
    ("bad id charset", _file("a", A, _entry("b c", GOOD)), "codec_key_id_invalid", "keys[1].id: 'b c'"),
    ("an id too long", _file("a", _entry("a" * 65, GOOD)), "codec_key_id_invalid", "at most 64"),
    ("an id not a string", _file("a", _entry(7, GOOD)), "codec_key_id_invalid", "keys[0].id"),
]


@pytest.mark.parametrize(("case", "content", "code", "phrase"), BAD_FILES, ids=[c[0] for c in BAD_FILES])
def test_each_bad_keys_file_is_refused_with_its_own_code_naming_the_setting_and_no_key(
    tmp_path: Path, case: str, content: Any, code: str, phrase: str
) -> None:
    path = write_keys_file(tmp_path / "keys.json", content)
    with pytest.raises(InvalidInput) as raised:
        load_key_ring(path)
    assert raised.value.code == code, case
    assert phrase in raised.value.message
    assert raised.value.message.startswith(f"SPECIALISTS_CODEC_KEYS_FILE={str(path)!r}: ")
    assert GOOD not in raised.value.message and "not*base64!" not in raised.value.message


@pytest.mark.parametrize("mode", [0o604, 0o606, 0o620, 0o660, 0o644])
def test_a_keys_file_others_can_read_or_others_can_write_is_refused(tmp_path: Path, mode: int) -> None:
    path = write_keys_file(tmp_path / "keys.json", keys_document("key-1"), mode=mode)
    with pytest.raises(InvalidInput) as raised:
        load_key_ring(path)
    assert raised.value.code == "codec_keys_insecure"
    assert f"mode {mode:04o}" in raised.value.message and "chmod 600" in raised.value.message


@pytest.mark.parametrize("mode", [0o600, 0o400, 0o640, 0o440])
def test_a_keys_file_its_owner_and_group_may_read_is_accepted(tmp_path: Path, mode: int) -> None:
    path = write_keys_file(tmp_path / "keys.json", keys_document("key-1"), mode=mode)
    assert load_key_ring(path).current == "key-1"


def test_a_missing_keys_file_or_a_directory_is_unreadable(tmp_path: Path) -> None:
    for path, detail in [(tmp_path / "absent.json", "No such file"), (tmp_path, "not a regular file")]:
        with pytest.raises(InvalidInput, match=detail) as raised:
            load_key_ring(path)
        assert raised.value.code == "codec_keys_unreadable"


# ---------------------------------------------------------------------------------- data converter


def test_without_a_keys_file_the_converter_is_the_plain_pydantic_one() -> None:
    assert data_converter(Settings.from_env({})) is pydantic_data_converter


def test_with_a_keys_file_the_converter_is_pydantic_with_the_codec_and_encrypted_failures(
    tmp_path: Path,
) -> None:
    path = write_keys_file(tmp_path / "keys.json", keys_document("key-2", "key-1", "key-2"))
    settings = Settings.from_env({"SPECIALISTS_CODEC_KEYS_FILE": str(path)})
    assert settings.codec_keys_file == path
    converter = data_converter(settings)
    assert converter.payload_converter_class is pydantic_data_converter.payload_converter_class
    assert isinstance(converter.payload_codec, EncryptionCodec)
    assert converter.payload_codec.current_key_id == "key-2"
    assert isinstance(converter.failure_converter, DefaultFailureConverterWithEncodedAttributes)


async def test_the_codec_converter_round_trips_values_and_encrypts_failure_messages(tmp_path: Path) -> None:
    from temporalio.api.failure.v1 import Failure
    from temporalio.exceptions import ApplicationError

    path = write_keys_file(tmp_path / "keys.json", keys_document("key-1"))
    converter = data_converter(Settings.from_env({"SPECIALISTS_CODEC_KEYS_FILE": str(path)}))
    payloads = await converter.encode([{"finding": "orders.customer_id"}])
    assert b"orders.customer_id" not in payloads[0].SerializeToString()
    assert await converter.decode(payloads) == [{"finding": "orders.customer_id"}]

    failure = Failure()
    await converter.encode_failure(ApplicationError("model said: orders.customer_id", type="x"), failure)
    assert b"orders.customer_id" not in failure.SerializeToString()
    restored = await converter.decode_failure(failure)
    assert "model said: orders.customer_id" in str(restored)


def test_a_bad_keys_file_setting_is_refused_naming_the_variable() -> None:
    with pytest.raises(InvalidInput, match="SPECIALISTS_CODEC_KEYS_FILE contains a NUL"):
        Settings.from_env({"SPECIALISTS_CODEC_KEYS_FILE": "a\x00b"})
    assert Settings.from_env({"SPECIALISTS_CODEC_KEYS_FILE": "  "}).codec_keys_file is None
