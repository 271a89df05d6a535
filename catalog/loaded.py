"""A validated catalog in memory, with its canonical sha256."""

from __future__ import annotations

from dataclasses import dataclass, field

from catalog.schema import CatalogFile, Profile


@dataclass(frozen=True)
class LoadedCatalog:
    """A catalog that passed validation. ``sha256`` is the canonical hash of the parsed file."""

    file: CatalogFile
    sha256: str
    profiles: dict[str, Profile] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "profiles", {p.id: p for p in self.file.profiles})

    @property
    def version(self) -> str:
        """The catalog's own version string (``MAJOR.MINOR.PATCH``)."""
        return self.file.catalog_version
