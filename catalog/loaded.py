"""A validated catalog in memory, with its canonical sha256."""

from catalog.schema import CatalogFile, Profile


class LoadedCatalog:
    """A catalog that passed validation. ``sha256`` is the canonical hash of the parsed file;
    ``profiles`` maps each profile's id to it. Immutable; equal when file and hash are equal.

    A plain class rather than a dataclass: building a dataclass costs every process that loads the
    catalog about a millisecond (``specialists route`` starts in a few hundred).
    """

    __slots__ = ("file", "profiles", "sha256")

    file: CatalogFile
    sha256: str
    profiles: dict[str, Profile]

    def __init__(self, file: CatalogFile, sha256: str) -> None:
        object.__setattr__(self, "file", file)
        object.__setattr__(self, "sha256", sha256)
        object.__setattr__(self, "profiles", {p.id: p for p in file.profiles})

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

    @property
    def version(self) -> str:
        """The catalog's own version string (``MAJOR.MINOR.PATCH``)."""
        return self.file.catalog_version
