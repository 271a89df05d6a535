"""Canonical JSON (RFC 8785) and the catalog sha256."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from catalog.validation import validate_catalog_data, validate_catalog_file
from contracts.hashing import CanonicalJsonError, canonical_json, canonical_sha256
from tests.catalog.samples import catalog

TINY = {"profile": "code-reviewer", "score": 1.5, "tags": ["b", "a"], "ok": True, "none": None, "n": -7}
TINY_CANONICAL = b'{"n":-7,"none":null,"ok":true,"profile":"code-reviewer","score":1.5,"tags":["b","a"]}'
TINY_SHA256 = "9b472cbec4acb691b92332f0212868b64b4937655ca587f4de54ab7cff3d3e7b"


def test_canonical_json_sorts_keys_drops_whitespace_and_keeps_list_order() -> None:
    assert canonical_json(TINY) == TINY_CANONICAL


def test_canonical_sha256_of_a_fixed_object_is_a_known_constant() -> None:
    assert canonical_sha256(TINY) == TINY_SHA256


def test_canonical_json_writes_utf8_and_shortest_numbers() -> None:
    assert canonical_json({"é": "€", "a": 1e21, "b": 0.1, "c": 1.0}) == (
        b'{"a":1e+21,"b":0.1,"c":1,"\xc3\xa9":"\xe2\x82\xac"}'
    )


@pytest.mark.parametrize(
    "value",
    [2**53, float("nan"), float("inf"), {1: "non-string key"}, {"set"}, "\ud800"],
    ids=["integer-beyond-2-53", "nan", "infinity", "non-string-key", "set", "lone-surrogate"],
)
def test_value_without_canonical_form_raises_canonical_json_error(value: object) -> None:
    with pytest.raises(CanonicalJsonError):
        canonical_sha256(value)


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_catalog_hash_ignores_key_order_and_whitespace_of_the_file(tmp_path: Path) -> None:
    data = catalog()
    compact = _write(tmp_path / "compact.json", json.dumps(data, separators=(",", ":")))
    reordered = json.loads(json.dumps(data), object_pairs_hook=lambda pairs: dict(reversed(pairs)))
    pretty = _write(tmp_path / "pretty.json", json.dumps(reordered, indent=7, ensure_ascii=True) + "\n\n")

    first, second = validate_catalog_file(compact), validate_catalog_file(pretty)
    assert first.valid and second.valid
    assert first.sha256 == second.sha256 == canonical_sha256(data)
    assert first.catalog is not None and first.catalog.sha256 == first.sha256


def test_catalog_hash_changes_when_any_value_changes() -> None:
    data = catalog()
    changed = catalog()
    changed["profiles"][1]["deliverables"][0] += "."
    assert validate_catalog_data(data).sha256 != validate_catalog_data(changed).sha256


def test_catalog_hash_is_of_the_parsed_file_not_of_schema_defaults() -> None:
    data = catalog()
    del data["profiles"][0]["routing"]["domains"]  # the schema fills in [] but the file does not
    report = validate_catalog_data(data)
    assert report.valid
    assert report.sha256 == canonical_sha256(data)
    assert report.catalog is not None
    assert report.sha256 != canonical_sha256(report.catalog.file.model_dump(mode="json"))
