"""A validated catalog in memory, with its canonical sha256, and what the router reads of it."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from contracts.enums import TaskType

if TYPE_CHECKING:
    from catalog.schema import CatalogFile, Profile

_BUILDING: Final = threading.Lock()


class ProfileSignals(NamedTuple):
    """What the router reads of one profile: its id, its independent reviewer and its routing
    signals (:class:`catalog.schema.RoutingSignals`)."""

    id: str
    reviewer: str
    keywords: tuple[str, ...]
    domains: tuple[str, ...]
    roles: tuple[str, ...]
    task_types: tuple[TaskType, ...]


class LoadedCatalog:
    """A catalog that passed validation. ``sha256`` is the canonical hash of the parsed file, ``file``
    the catalog, ``profiles`` maps each profile's id to it and ``signals`` is what the router reads.
    Immutable; equal when file and hash are equal.

    :meth:`reviewed` makes one from the reviewed catalog's parsed bytes without building its pydantic
    models: ``file`` and ``profiles`` are built on first use, while ``signals`` are read from the data,
    so a route preview builds no catalog model at all (nor imports :mod:`catalog.schema`). A plain
    class rather than a dataclass for the same reason: building a dataclass costs every process about
    a millisecond.
    """

    __slots__ = ("_data", "_file", "_profiles", "_signals", "sha256", "version")

    sha256: str
    version: str
    """The catalog's own version string (``MAJOR.MINOR.PATCH``)."""

    _data: dict[str, Any] | None
    _file: CatalogFile | None
    _profiles: dict[str, Profile] | None
    _signals: tuple[ProfileSignals, ...] | None

    def __init__(self, file: CatalogFile, sha256: str) -> None:
        self._set(_data=None, _file=file, _profiles=None, _signals=None, sha256=sha256)
        self._set(version=file.catalog_version)

    @classmethod
    def reviewed(cls, data: dict[str, Any], sha256: str) -> LoadedCatalog:
        """The catalog parsed from the exact bytes of the reviewed file (see :mod:`catalog.loader`),
        whose models are built on first use with :func:`catalog.schema.construct_reviewed_catalog`.
        ``data`` is handed over: nothing else may use it."""
        catalog = cls.__new__(cls)
        catalog._set(_data=data, _file=None, _profiles=None, _signals=None, sha256=sha256)
        catalog._set(version=data["catalog_version"])
        return catalog

    def _set(self, **values: object) -> None:
        for name, value in values.items():
            object.__setattr__(self, name, value)

    @property
    def file(self) -> CatalogFile:
        """The whole catalog file."""
        if (file := self._file) is None:
            with _BUILDING:  # once, also when several threads ask at the same time
                if (file := self._file) is None:
                    from catalog.schema import construct_reviewed_catalog

                    assert self._data is not None
                    file = construct_reviewed_catalog(self._data)
                    self._set(_file=file, _data=None)
        return file

    @property
    def profiles(self) -> dict[str, Profile]:
        """Each profile by its id."""
        if (profiles := self._profiles) is None:
            profiles = {p.id: p for p in self.file.profiles}
            self._set(_profiles=profiles)
        return profiles

    @property
    def signals(self) -> tuple[ProfileSignals, ...]:
        """What the router reads of each profile, in the catalog's order."""
        if (signals := self._signals) is not None:
            return signals
        data = self._data
        if data is None:
            signals = tuple(
                ProfileSignals(
                    p.id,
                    p.reviewer,
                    tuple(p.routing.keywords),
                    tuple(p.routing.domains),
                    tuple(p.routing.roles),
                    tuple(p.routing.task_types),
                )
                for p in self.file.profiles
            )
        else:  # the reviewed data: valid, so read as the schema reads it (lists default to empty)
            signals = tuple(
                ProfileSignals(
                    p["id"],
                    p["reviewer"],
                    tuple(p["routing"]["keywords"]),
                    tuple(p["routing"].get("domains", ())),
                    tuple(p["routing"].get("roles", ())),
                    tuple(map(TaskType, p["routing"].get("task_types", ()))),
                )
                for p in data["profiles"]
            )
        self._set(_signals=signals)
        return signals

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"LoadedCatalog is immutable: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"LoadedCatalog is immutable: cannot delete {name!r}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LoadedCatalog):
            return NotImplemented
        return (self.file, self.sha256) == (other.file, other.sha256)

    def __hash__(self) -> int:
        return hash((self.file, self.sha256))

    def __repr__(self) -> str:
        return f"LoadedCatalog(file={self.file!r}, sha256={self.sha256!r})"
