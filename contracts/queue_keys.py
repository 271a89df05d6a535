"""Item keys of the goal queue (docs/architecture.md "Goal queue"): a series per repository and a
sequence number (``ORD-12``), or a provisional ``Q-<n>`` for an item without a repository, renamed into
its repository's series when it is approved.

:class:`KeyAllocator` is the allocation state the queue workflow holds and carries across
continue-as-new. It is immutable: every allocation returns a new allocator and the key. Numbers only
grow — a key is never issued twice, also not after a rename. Pure: no I/O.

A repository's series is the one registered for it, when there is one, else one derived from its alias
(:func:`series_candidates`): the alias's ASCII letters, upper-cased — the first three, then four, then
five of them; then the first three (or two) followed by one letter ``A``..``Z``, then by two letters
``AA``..``ZZ``. The first candidate no other repository holds in the allocator is the series, and it
stays the repository's. An alias with fewer than two letters is padded with ``X`` (``7`` → ``XX``).
"""

from __future__ import annotations

import itertools
import re
import string
from collections.abc import Iterator
from typing import Final

from pydantic import BaseModel, ConfigDict

from contracts.queue_items import PROVISIONAL_SERIES, QueueRefusalCode, QueueRefused

SERIES_PATTERN: Final = re.compile(r"^[A-Z]{2,5}$")
"""A repository's series: 2..5 upper-case ASCII letters (never ``Q`` alone, the provisional series)."""
_STEM_CHARS: Final = 3
_PAD: Final = "X"


def check_series(series: str) -> str:
    """``series`` when it is 2..5 upper-case ASCII letters; else raise ``ValueError``."""
    if SERIES_PATTERN.fullmatch(series) is None:
        raise ValueError(f"series {series!r} must be 2 to 5 upper-case letters A-Z")
    return series


def alias_letters(alias: str) -> str:
    """The ASCII letters of ``alias``, upper-cased, padded with ``X`` to at least two."""
    letters = "".join(ch for ch in alias if ch in string.ascii_letters).upper()
    return letters.ljust(2, _PAD)


def series_candidates(alias: str) -> Iterator[str]:
    """Every series the alias may get, in the order they are tried, without repeats (see the module
    docstring): ``orders`` → ``ORD``, ``ORDE``, ``ORDER``, ``ORDA`` … ``ORDZ``, ``ORDAA`` … ``ORDZZ``."""
    letters = alias_letters(alias)
    seen: set[str] = set()
    stem = letters[:_STEM_CHARS]
    prefixes = (letters[:length] for length in (3, 4, 5))
    one = (stem + a for a in string.ascii_uppercase)
    two = (stem + a + b for a, b in itertools.product(string.ascii_uppercase, repeat=2))
    for candidate in itertools.chain(prefixes, one, two):
        if candidate not in seen and SERIES_PATTERN.fullmatch(candidate):
            seen.add(candidate)
            yield candidate


class KeyAllocator(BaseModel):
    """The queue's key allocation state: the series of each repository (alias → series), the last
    number issued in each series, and the last provisional number. Immutable; see the module docstring."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    series: dict[str, str] = {}
    last_number: dict[str, int] = {}
    last_provisional: int = 0

    def series_for(self, alias: str, registered: str | None = None) -> tuple[KeyAllocator, str]:
        """The series of repository ``alias`` and the allocator that remembers it.

        ``registered``: the series registered for the repository, which wins over a derived one (and
        replaces it for later keys; keys already issued keep theirs). Raises ``ValueError`` for a
        malformed registered series, :class:`QueueRefused` ``series_conflict`` when it is another
        repository's series, and ``series_exhausted`` when every derived candidate is taken.
        """
        held = {series: other for other, series in self.series.items() if other != alias}
        if registered is not None:
            check_series(registered)
            if registered in held:
                raise QueueRefused(
                    QueueRefusalCode.SERIES_CONFLICT,
                    f"series {registered} registered for {alias} is already the series of {held[registered]}",
                    series=registered,
                    repo_alias=alias,
                    held_by=held[registered],
                )
            return self._remember(alias, registered), registered
        current = self.series.get(alias)
        if current is not None:
            return self, current
        for candidate in series_candidates(alias):
            if candidate not in held:
                return self._remember(alias, candidate), candidate
        raise QueueRefused(
            QueueRefusalCode.SERIES_EXHAUSTED,
            f"every series derived from {alias!r} is taken: register a series for the repository",
            repo_alias=alias,
        )

    def allocate(self, alias: str | None, registered: str | None = None) -> tuple[KeyAllocator, str]:
        """The next key for an item of repository ``alias`` (``Q-<n>`` when ``alias`` is ``None``) and
        the allocator after it. Raises as :meth:`series_for`."""
        if alias is None:
            number = self.last_provisional + 1
            return self.model_copy(update={"last_provisional": number}), f"{PROVISIONAL_SERIES}-{number}"
        allocator, series = self.series_for(alias, registered)
        number = allocator.last_number.get(series, 0) + 1
        numbers = {**allocator.last_number, series: number}
        return allocator.model_copy(update={"last_number": numbers}), f"{series}-{number}"

    def _remember(self, alias: str, series: str) -> KeyAllocator:
        if self.series.get(alias) == series:
            return self
        return self.model_copy(update={"series": {**self.series, alias: series}})
