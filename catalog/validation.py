"""Validate a candidate catalog and report every violation.

A candidate is checked as raw JSON (what ``json.loads`` returns), so one malformed profile is reported
by name while every other profile is still checked, and an invalid catalog lists all of its problems at
once. The checks:

* structure — the top level against :class:`catalog.schema.CatalogFile` and each profile on its own
  against :class:`catalog.schema.Profile` (missing, unknown or mistyped fields, bounds, patterns);
  ``schema_version`` must be exactly the integer :data:`catalog.schema.SUPPORTED_SCHEMA_VERSION`;
* cross-profile — duplicate ids, a reviewer that is no profile of the catalog, a profile reviewing
  itself (docs/architecture.md "Run lifecycle": every run has an *independent*
  reviewer);
* provenance — origin ``upstream`` needs ``repository``, ``source_path``, ``sha256`` and ``license``;
  origin ``local`` needs a ``local_reason`` and must not carry ``source_path``, ``source_commit`` or
  ``sha256`` (a local profile has no upstream file);
* text safety — every string in every profile and in the catalog header is scanned by
  :func:`catalog.safety.scan_text`; each finding is a violation named after its safety rule;
* the file itself — readable, at most :data:`MAX_CATALOG_BYTES`, UTF-8, JSON without ``NaN``/
  ``Infinity`` and without a key repeated inside one object (readers disagree on which value wins),
  and representable as RFC 8785 canonical JSON (needed for the catalog sha256).

Violation rules (stable ``snake_case``): ``file_unreadable``, ``file_too_large``, ``not_utf8``,
``not_json``, ``duplicate_json_key``, ``not_canonical_json``, ``not_an_object``, ``missing_field``,
``unknown_field``, ``wrong_type``, ``too_short``, ``too_long``, ``pattern_mismatch``,
``not_allowed_value``, ``invalid_value``, ``unsupported_schema_version``, ``duplicate_id``,
``unknown_reviewer``, ``self_reviewer``, ``incomplete_provenance``, ``inconsistent_provenance``, and
the :class:`catalog.safety.SafetyRule` names.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from pydantic_core import ErrorDetails

from catalog.loaded import LoadedCatalog
from catalog.safety import scan_text
from catalog.schema import SUPPORTED_SCHEMA_VERSION, CatalogFile, Profile, ProfileId
from contracts.errors import InvalidInput
from contracts.hashing import CanonicalJsonError, canonical_sha256

__all__ = [
    "MAX_CATALOG_BYTES",
    "CatalogInvalid",
    "CatalogReport",
    "Violation",
    "validate_catalog_data",
    "validate_catalog_file",
]

MAX_CATALOG_BYTES: Final = 4 * 1024 * 1024
"""A catalog file larger than this is refused unread (the real one is about 50 KB)."""

_UPSTREAM_REQUIRED: Final = ("repository", "source_path", "sha256", "license")
_LOCAL_FORBIDDEN: Final = ("source_path", "source_commit", "sha256")
_PLAIN_KEY: Final = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_PROFILE_ID: Final = TypeAdapter(ProfileId)


class Violation(BaseModel):
    """One broken rule.

    ``profile`` is the profile's id, ``#N`` (its 0-based position) when it has no usable id, or
    ``None`` for the catalog as a whole; ``field`` is the dotted path inside it (list items as
    ``[i]``, ``""`` for the whole); ``rule`` is a stable ``snake_case`` name (see the module
    docstring); ``message`` names the profile, the field and the rule and says what is wrong.
    """

    model_config = ConfigDict(frozen=True)

    profile: str | None
    field: str
    rule: str
    message: str


class CatalogReport(BaseModel):
    """The outcome of validating one candidate catalog.

    ``valid`` is true exactly when ``violations`` is empty, and then ``catalog`` holds the loaded
    catalog; ``violations`` is sorted (catalog-level first, then profiles in file order, then field,
    rule and message). ``sha256`` is the canonical RFC 8785 hash of the parsed JSON whenever it could be
    parsed and canonicalised, valid or not. ``catalog`` is left out of ``model_dump``.
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    valid: bool
    violations: list[Violation]
    sha256: str | None
    catalog: LoadedCatalog | None = Field(default=None, exclude=True)


class CatalogInvalid(InvalidInput):
    """The catalog failed validation (code ``catalog_invalid``, exit 2); ``violations`` lists why."""

    def __init__(self, violations: Sequence[Violation], source: str) -> None:
        self.violations = list(violations)
        count = len(self.violations)
        first = f"; first: {self.violations[0].message}" if self.violations else ""
        super().__init__(
            "catalog_invalid",
            f"catalog {source} is invalid: {count} violation(s){first}. "
            "Run `specialists catalog --file PATH` to list them all.",
        )


# ------------------------------------------------------------------------------------ collecting

Loc = tuple[int | str, ...]


@dataclass
class _Collector:
    """Gathers violations with a sort key: catalog first, then profiles by position, then field."""

    entries: list[tuple[tuple[Any, ...], Violation]] = field(default_factory=list)

    def add(self, scope: _Scope, loc: Loc, rule: str, detail: str) -> None:
        path = _field_path(loc)
        where = f"profile {scope.label}" if scope.label is not None else "catalog"
        message = f"{where}, field {path or '(whole)'}: {rule}: {detail}"
        key = (scope.position, _loc_key(loc), rule, message)
        self.entries.append((key, Violation(profile=scope.label, field=path, rule=rule, message=message)))

    def violations(self) -> list[Violation]:
        seen: set[Violation] = set()
        result: list[Violation] = []
        for _, violation in sorted(self.entries, key=lambda entry: entry[0]):
            if violation not in seen:
                seen.add(violation)
                result.append(violation)
        return result


@dataclass(frozen=True)
class _Scope:
    label: str | None
    position: int


_CATALOG: Final = _Scope(label=None, position=-1)


def _render_key(part: int | str) -> str:
    if isinstance(part, int):
        return f"[{part}]"
    # A key may come from the candidate file (an unknown field): show it escaped, never raw.
    return part if _PLAIN_KEY.match(part) else json.dumps(part[:60], ensure_ascii=True)


def _field_path(loc: Loc) -> str:
    path = ""
    for part in loc:
        rendered = _render_key(part)
        path += rendered if isinstance(part, int) or not path else f".{rendered}"
    return path


def _loc_key(loc: Loc) -> tuple[tuple[int, int, str], ...]:
    return tuple((0, part, "") if isinstance(part, int) else (1, 0, part) for part in loc)


# ------------------------------------------------------------------------------------ structure


def _schema_rule(error: ErrorDetails) -> str:
    kind = error["type"]
    if kind == "missing":
        return "missing_field"
    if kind == "extra_forbidden":
        return "unknown_field"
    if kind.endswith("_type") or kind == "model_attributes_type":
        return "wrong_type"
    if kind in ("too_short", "string_too_short"):
        return "too_short"
    if kind in ("too_long", "string_too_long"):
        return "too_long"
    if kind == "string_pattern_mismatch":
        return "pattern_mismatch"
    if kind in ("literal_error", "enum"):
        return "not_allowed_value"
    return "invalid_value"


def _schema_errors(exc: ValidationError) -> Iterator[tuple[Loc, str, str]]:
    for error in exc.errors(include_url=False, include_input=False):
        yield tuple(error["loc"]), _schema_rule(error), error["msg"]


def _check_header(data: dict[str, Any], out: _Collector) -> None:
    """Top-level fields via CatalogFile; profile items are left to :func:`_check_profile`."""
    try:
        CatalogFile.model_validate(data)
    except ValidationError as exc:
        for loc, rule, msg in _schema_errors(exc):
            if len(loc) >= 2 and loc[0] == "profiles" and isinstance(loc[1], int):
                continue
            if loc == ("schema_version",) and rule != "missing_field":
                continue  # reported once, by the exact check below
            out.add(_CATALOG, loc, rule, msg)
    version = data.get("schema_version")
    if "schema_version" in data and not (type(version) is int and version == SUPPORTED_SCHEMA_VERSION):
        shown = json.dumps(version)[:40] if isinstance(version, int | float | bool | None) else "a non-number"
        out.add(
            _CATALOG,
            ("schema_version",),
            "unsupported_schema_version",
            f"schema version {shown} is not supported; this build reads schema version "
            f"{SUPPORTED_SCHEMA_VERSION}",
        )


def _profile_scope(item: object, position: int) -> _Scope:
    raw_id = item.get("id") if isinstance(item, dict) else None
    if isinstance(raw_id, str):
        try:
            return _Scope(label=_PROFILE_ID.validate_python(raw_id), position=position)
        except ValidationError:
            pass
    return _Scope(label=f"#{position}", position=position)


def _check_profile(item: object, scope: _Scope, out: _Collector) -> Profile | None:
    try:
        return Profile.model_validate(item)
    except ValidationError as exc:
        for loc, rule, msg in _schema_errors(exc):
            out.add(scope, loc, rule, msg)
        return None


# ---------------------------------------------------------------------------------- cross checks


def _valid_id(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    try:
        return _PROFILE_ID.validate_python(value)
    except ValidationError:
        return None


def _check_ids_and_reviewers(items: list[Any], scopes: list[_Scope], out: _Collector) -> None:
    first_position: dict[str, int] = {}
    for position, item in enumerate(items):
        profile_id = _valid_id(item.get("id")) if isinstance(item, dict) else None
        if profile_id is None:
            continue
        if profile_id in first_position:
            out.add(
                scopes[position],
                ("id",),
                "duplicate_id",
                f"id {profile_id!r} is already used by the profile at profiles[{first_position[profile_id]}]",
            )
        else:
            first_position[profile_id] = position

    for position, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        reviewer = _valid_id(item.get("reviewer"))
        if reviewer is None:
            continue  # absent or malformed: the schema check reports it
        if reviewer == _valid_id(item.get("id")):
            out.add(
                scopes[position],
                ("reviewer",),
                "self_reviewer",
                "a profile cannot review its own work: name an independent reviewer",
            )
        elif reviewer not in first_position:
            out.add(
                scopes[position],
                ("reviewer",),
                "unknown_reviewer",
                f"reviewer {reviewer!r} is not a profile of this catalog",
            )


def _blank(value: object) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _check_provenance(item: object, scope: _Scope, out: _Collector) -> None:
    provenance = item.get("provenance") if isinstance(item, dict) else None
    if not isinstance(provenance, dict):
        return
    origin = provenance.get("origin")
    if origin == "upstream":
        for name in _UPSTREAM_REQUIRED:
            if _blank(provenance.get(name)):
                out.add(
                    scope,
                    ("provenance", name),
                    "incomplete_provenance",
                    f"origin 'upstream' requires {name} (repository, source_path, sha256 and license "
                    "identify the adapted upstream file)",
                )
    elif origin == "local":
        if _blank(provenance.get("local_reason")):
            out.add(
                scope,
                ("provenance", "local_reason"),
                "incomplete_provenance",
                "origin 'local' requires local_reason: say why no upstream file is used",
            )
        for name in _LOCAL_FORBIDDEN:
            if provenance.get(name) is not None:
                out.add(
                    scope,
                    ("provenance", name),
                    "inconsistent_provenance",
                    f"origin 'local' must not carry {name}: a local profile has no upstream file "
                    "(use origin 'upstream' if it was adapted from one)",
                )


# -------------------------------------------------------------------------------------- safety


def _strings(value: object, loc: Loc) -> Iterator[tuple[Loc, str]]:
    """Every string inside ``value`` with its location (iterative: nesting depth is not bounded)."""
    stack: list[tuple[Loc, object]] = [(loc, value)]
    while stack:
        here, item = stack.pop()
        if isinstance(item, str):
            yield here, item
        elif isinstance(item, dict):
            stack.extend(((*here, str(key)), child) for key, child in item.items())
        elif isinstance(item, list):
            stack.extend(((*here, index), child) for index, child in enumerate(item))


def _check_text_safety(value: object, loc: Loc, scope: _Scope, out: _Collector) -> None:
    for path, text in _strings(value, loc):
        for finding in scan_text(text):
            out.add(scope, path, finding.rule.value, f"text safety rule broken: {finding.detail!r}")


# ------------------------------------------------------------------------------------ entry points


def _report(out: _Collector, sha256: str | None, catalog: CatalogFile | None) -> CatalogReport:
    violations = out.violations()
    loaded = None
    if not violations and catalog is not None and sha256 is not None:
        loaded = LoadedCatalog(file=catalog, sha256=sha256)
    return CatalogReport(valid=loaded is not None, violations=violations, sha256=sha256, catalog=loaded)


def _check_data(data: object, out: _Collector) -> tuple[str | None, CatalogFile | None]:
    sha256: str | None = None
    try:
        sha256 = canonical_sha256(data)
    except CanonicalJsonError as exc:
        out.add(_CATALOG, (), "not_canonical_json", str(exc))

    if not isinstance(data, dict):
        out.add(_CATALOG, (), "not_an_object", "a catalog file must be one JSON object")
        return sha256, None

    _check_header(data, out)
    _check_text_safety({k: v for k, v in data.items() if k != "profiles"}, (), _CATALOG, out)

    items = data.get("profiles")
    if not isinstance(items, list):
        return sha256, None
    scopes = [_profile_scope(item, position) for position, item in enumerate(items)]
    profiles = [_check_profile(item, scope, out) for item, scope in zip(items, scopes, strict=True)]
    _check_ids_and_reviewers(items, scopes, out)
    for item, scope in zip(items, scopes, strict=True):
        _check_provenance(item, scope, out)
        _check_text_safety(item, (), scope, out)

    if any(profile is None for profile in profiles):
        return sha256, None
    try:
        return sha256, CatalogFile.model_validate(data)
    except ValidationError:
        return sha256, None  # already reported by _check_header


def validate_catalog_data(data: object) -> CatalogReport:
    """Validate a candidate catalog given as parsed JSON (the object ``json.loads`` returned).

    Input: any object. Output: a :class:`CatalogReport` listing every violation (see the module
    docstring for the checks and rule names, and :mod:`catalog.schema` for the structure). Never raises
    for bad input: every problem is a violation.
    """
    out = _Collector()
    sha256, catalog = _check_data(data, out)
    return _report(out, sha256, catalog)


class _DuplicateKeys:
    """``object_pairs_hook`` for ``json.loads`` that records keys repeated inside one object."""

    def __init__(self) -> None:
        self.keys: list[str] = []

    def __call__(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        result: dict[str, Any] = {}
        for key, value in pairs:
            if key in result:
                self.keys.append(key)
            result[key] = value
        return result


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def validate_catalog_file(path: Path) -> CatalogReport:
    """Read and validate a candidate catalog file.

    Input: a path. Output: a :class:`CatalogReport`; ``sha256`` is the canonical hash of the parsed
    JSON (key order and whitespace of the file do not change it). A file that cannot be read, is larger
    than :data:`MAX_CATALOG_BYTES`, is not UTF-8 or is not JSON gives one violation (``file_unreadable``,
    ``file_too_large``, ``not_utf8``, ``not_json``); this function does not raise for a bad file.
    """
    out = _Collector()
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_CATALOG_BYTES + 1)
    except OSError as exc:
        out.add(_CATALOG, (), "file_unreadable", f"cannot read {path}: {exc.strerror or exc}")
        return _report(out, None, None)
    if len(raw) > MAX_CATALOG_BYTES:
        out.add(_CATALOG, (), "file_too_large", f"{path} is larger than {MAX_CATALOG_BYTES} bytes")
        return _report(out, None, None)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        out.add(_CATALOG, (), "not_utf8", f"{path} is not UTF-8 (invalid byte at offset {exc.start})")
        return _report(out, None, None)

    duplicates = _DuplicateKeys()
    try:
        data = json.loads(text, object_pairs_hook=duplicates, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        out.add(
            _CATALOG, (), "not_json", f"{path} is not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        )
        return _report(out, None, None)
    except (ValueError, RecursionError) as exc:
        out.add(_CATALOG, (), "not_json", f"{path} is not JSON: {exc}")
        return _report(out, None, None)

    for key in duplicates.keys:
        out.add(
            _CATALOG,
            (),
            "duplicate_json_key",
            f"key {json.dumps(key[:60], ensure_ascii=True)} appears twice in one JSON object; "
            "readers disagree on which value wins",
        )
    sha256, catalog = _check_data(data, out)
    return _report(out, sha256, catalog)
