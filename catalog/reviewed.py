"""The digests of the catalog as reviewed: the canonical sha256 of ``catalog.v1.json`` when it was
last validated and reviewed, and the sha256 of the file's bytes at that point.

:func:`catalog.loader.load_catalog` trusts the shipped file without re-running the text-safety scan
only when it hashes to exactly :data:`REVIEWED_CATALOG_SHA256`; any other content is validated in
full. When even its bytes are the reviewed ones (:data:`REVIEWED_CATALOG_FILE_SHA256`), the loader
also skips canonicalising the file and validating it against the schema: the content is then exactly
what was reviewed. The test ``tests/catalog/test_reviewed.py`` proves the shipped file validates with
no violation, hashes to both values, and that the loader builds from it the very catalog a full
validation gives, so changing the catalog without re-validating it (and updating these digests) fails
CI.
"""

from __future__ import annotations

from typing import Final

REVIEWED_CATALOG_SHA256: Final = "f0d659c6da4a4c53345108214a96d41e73aaaff3a4db7f8ed348441e2b75894b"
"""RFC 8785 canonical sha256 of the reviewed catalog (the catalog hash every contract records)."""

REVIEWED_CATALOG_FILE_SHA256: Final = "b3c74822002a03ff203b9546a13a993c74b1345edc75592b6b63a436178caaa3"
"""sha256 of the reviewed ``catalog.v1.json`` as bytes (whitespace and key order included)."""
