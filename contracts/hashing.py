"""Canonical JSON and its sha256 (RFC 8785, JSON Canonicalization Scheme).

The canonical form has object keys sorted by their UTF-16 code units, UTF-8 output, no insignificant
whitespace and numbers in the ECMAScript shortest form, so the same JSON value hashes to the same
digest on every machine, whatever the key order or whitespace of the file it came from. The
serialisation itself is done by the ``rfc8785`` package.

The catalog's sha256 is :func:`canonical_sha256` of the catalog file *as parsed* (a ``dict`` from
``json.loads``), never of a re-serialised pydantic model, so defaults or field order in the schema
cannot change it.
"""

from __future__ import annotations

import hashlib
from typing import Any

import rfc8785

__all__ = ["CanonicalJsonError", "canonical_json", "canonical_sha256"]


class CanonicalJsonError(ValueError):
    """A value has no RFC 8785 canonical form.

    Raised for a value outside JSON (a set, bytes, a model object), an object key that is not a
    string, an integer outside the IEEE 754 safe range (±2**53 - 1), a NaN or infinite float, or a
    string holding a lone surrogate.
    """


def canonical_json(obj: object) -> bytes:
    """Serialise a JSON value to its RFC 8785 canonical bytes.

    Input: ``None``, ``bool``, ``int``, ``float``, ``str``, or ``list``/``tuple``/``dict`` of these
    (dict keys must be ``str``). Output: UTF-8 bytes of the canonical form. Raises
    :class:`CanonicalJsonError` when the value has no canonical form (see the class docstring).
    """
    value: Any = obj  # rfc8785 types its input as a JSON value; it rejects anything else itself
    try:
        return rfc8785.dumps(value)
    except rfc8785.CanonicalizationError as exc:
        raise CanonicalJsonError(f"value has no RFC 8785 canonical form: {exc}") from exc
    except RecursionError as exc:
        raise CanonicalJsonError("value is nested too deeply to canonicalise") from exc


def canonical_sha256(obj: object) -> str:
    """The sha256 of :func:`canonical_json` of ``obj``, as 64 lower-case hex digits.

    Raises :class:`CanonicalJsonError` like :func:`canonical_json`.
    """
    return hashlib.sha256(canonical_json(obj)).hexdigest()
