"""Source verification against a git repository built in the test: ok, mismatch, missing, local; the
pure comparison against an in-memory reader; and the licence copy kept in third_party/."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from catalog.schema import CatalogFile, UpstreamPin
from catalog.sources import (
    LICENSE_COPY_CHECK_ID,
    LicenseCopy,
    SourceStatus,
    SourceVerification,
    check_license_copy,
    license_copy_path,
    verify_sources,
)
from contracts.errors import InvalidInput
from runtime.catalog_sources import (
    MAX_LICENSE_COPY_BYTES,
    THIRD_PARTY_DIR,
    open_source_repository,
    read_license_copy,
)
from tests.catalog.samples import (
    ROOT,
    catalog,
    local_provenance,
    profile,
    shipped_catalog_data,
    upstream_provenance,
)

OLD_TEXT = b"# Analyst\n\nFirst version of the analyst profile.\n"
NEW_TEXT = b"# Analyst\n\nSecond version of the analyst profile.\n"
REVIEWER_TEXT = b"# Reviewer\n\nReviews findings.\n"
LICENSE_TEXT = b"Permission is granted to test.\n"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _git(root: Path, *args: str) -> str:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "Test",
        "GIT_AUTHOR_EMAIL": "test@example.org",
        "GIT_COMMITTER_NAME": "Test",
        "GIT_COMMITTER_EMAIL": "test@example.org",
    }
    result = subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, env=env, check=True, text=True
    )
    return result.stdout.strip()


class Upstream:
    """A repository with two commits: ``old`` holds the first analyst text, ``new`` the second."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir()
        _git(root, "init", "-q", "-b", "main")
        (root / "profiles").mkdir()
        (root / "profiles" / "analyst.md").write_bytes(OLD_TEXT)
        (root / "profiles" / "reviewer.md").write_bytes(REVIEWER_TEXT)
        (root / "LICENSE").write_bytes(LICENSE_TEXT)
        _git(root, "add", "-A")
        _git(root, "commit", "-q", "-m", "first")
        self.old = _git(root, "rev-parse", "HEAD")
        (root / "profiles" / "analyst.md").write_bytes(NEW_TEXT)
        (root / "profiles" / "added-later.md").write_bytes(b"later\n")
        _git(root, "add", "-A")
        _git(root, "commit", "-q", "-m", "second")
        self.new = _git(root, "rev-parse", "HEAD")


@pytest.fixture
def upstream(tmp_path: Path) -> Upstream:
    return Upstream(tmp_path / "upstream")


def _catalog(upstream: Upstream, *profiles: dict[str, Any], license_sha256: str | None = None) -> CatalogFile:
    data = catalog(*profiles)
    data["upstream"]["commit"] = upstream.new
    if license_sha256 is not None:
        data["upstream"]["license_path"] = "LICENSE"
        data["upstream"]["license_sha256"] = license_sha256
    return CatalogFile.model_validate(data)


def _pinned(profile_id: str, path: str, sha256: str, commit: str | None = None) -> dict[str, Any]:
    provenance = upstream_provenance(path, sha256)
    provenance["source_commit"] = commit
    return profile(profile_id, "reviewer-one", provenance)


def _verify(cat: CatalogFile, root: Path) -> SourceVerification:
    return verify_sources(cat, open_source_repository(root))


def _statuses(result: SourceVerification) -> dict[str, str]:
    return {check.id: check.status.value for check in result.profiles}


def test_every_status_is_reported_per_profile(upstream: Upstream) -> None:
    cat = _catalog(
        upstream,
        _pinned("at-the-pin", "profiles/analyst.md", _sha(NEW_TEXT)),
        _pinned("at-own-commit", "profiles/analyst.md", _sha(OLD_TEXT), upstream.old),
        _pinned("changed-text", "profiles/reviewer.md", _sha(b"something else")),
        _pinned("no-such-file", "profiles/absent.md", _sha(NEW_TEXT)),
        _pinned("no-such-commit", "profiles/analyst.md", _sha(NEW_TEXT), "f" * 40),
        _pinned("not-yet-added", "profiles/added-later.md", _sha(b"later\n"), upstream.old),
        profile("reviewer-one", "at-the-pin", local_provenance()),
    )
    result = _verify(cat, upstream.root)
    assert _statuses(result) == {
        "at-the-pin": "ok",
        "at-own-commit": "ok",
        "changed-text": "mismatch",
        "no-such-file": "missing",
        "no-such-commit": "missing",
        "not-yet-added": "missing",
        "reviewer-one": "local",
    }
    assert result.verified is False
    assert result.license is None


def test_profile_with_its_own_source_commit_reads_the_older_blob(upstream: Upstream) -> None:
    cat = _catalog(
        upstream,
        _pinned("old-text-at-pin", "profiles/analyst.md", _sha(OLD_TEXT)),
        _pinned("old-text-at-old", "profiles/analyst.md", _sha(OLD_TEXT), upstream.old),
        profile("reviewer-one", "old-text-at-pin", local_provenance()),
    )
    checks = {c.id: c for c in _verify(cat, upstream.root).profiles}
    assert checks["old-text-at-pin"].status is SourceStatus.MISMATCH
    assert checks["old-text-at-pin"].commit == upstream.new
    assert checks["old-text-at-pin"].actual_sha256 == _sha(NEW_TEXT)
    assert checks["old-text-at-old"].status is SourceStatus.OK
    assert checks["old-text-at-old"].commit == upstream.old


def test_catalog_whose_sources_all_match_is_verified(upstream: Upstream) -> None:
    cat = _catalog(
        upstream,
        _pinned("analyst", "profiles/analyst.md", _sha(NEW_TEXT)),
        _pinned("reviewer-one", "profiles/reviewer.md", _sha(REVIEWER_TEXT), upstream.old),
        profile("writer", "analyst", local_provenance()),
        license_sha256=_sha(LICENSE_TEXT),
    )
    result = _verify(cat, upstream.root)
    assert result.verified is True
    assert result.license is not None and result.license.status is SourceStatus.OK
    dumped = result.model_dump(mode="json")
    assert dumped["profiles"][0] | {"detail": ""} == {
        "id": "analyst",
        "status": "ok",
        "path": "profiles/analyst.md",
        "commit": upstream.new,
        "expected_sha256": _sha(NEW_TEXT),
        "actual_sha256": _sha(NEW_TEXT),
        "detail": "",
    }


def test_license_mismatch_fails_verification(upstream: Upstream) -> None:
    cat = _catalog(
        upstream,
        _pinned("analyst", "profiles/analyst.md", _sha(NEW_TEXT)),
        profile("reviewer-one", "analyst", local_provenance()),
        license_sha256=_sha(b"another license"),
    )
    result = _verify(cat, upstream.root)
    assert result.license is not None and result.license.status is SourceStatus.MISMATCH
    assert _statuses(result) == {"analyst": "ok", "reviewer-one": "local"}
    assert result.verified is False


def test_uncommitted_changes_in_the_working_tree_do_not_change_the_outcome(upstream: Upstream) -> None:
    (upstream.root / "profiles" / "analyst.md").write_bytes(b"edited locally\n")
    cat = _catalog(
        upstream,
        _pinned("analyst", "profiles/analyst.md", _sha(NEW_TEXT)),
        profile("reviewer-one", "analyst", local_provenance()),
    )
    assert _verify(cat, upstream.root).verified is True


def test_git_variables_of_the_caller_do_not_redirect_git(
    upstream: Upstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    decoy = tmp_path / "decoy"
    (decoy / "profiles").mkdir(parents=True)
    _git(decoy, "init", "-q", "-b", "main")
    (decoy / "profiles" / "analyst.md").write_bytes(b"decoy\n")
    _git(decoy, "add", "-A")
    _git(decoy, "commit", "-q", "-m", "decoy")
    monkeypatch.setenv("GIT_DIR", str(decoy / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(decoy))
    cat = _catalog(
        upstream,
        _pinned("analyst", "profiles/analyst.md", _sha(NEW_TEXT)),
        profile("reviewer-one", "analyst", local_provenance()),
    )
    assert _verify(cat, upstream.root).verified is True


def test_a_bare_clone_can_be_the_source_root(upstream: Upstream, tmp_path: Path) -> None:
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(upstream.root), str(bare)], check=True)
    cat = _catalog(
        upstream,
        _pinned("analyst", "profiles/analyst.md", _sha(OLD_TEXT), upstream.old),
        profile("reviewer-one", "analyst", local_provenance()),
    )
    assert _verify(cat, bare).verified is True


@pytest.mark.parametrize("where", ["plain-directory", "absent-directory", "subdirectory-of-a-repository"])
def test_source_root_that_is_not_a_repository_top_is_invalid_input(
    upstream: Upstream, tmp_path: Path, where: str
) -> None:
    root = {
        "plain-directory": tmp_path,
        "absent-directory": tmp_path / "nothing-here",
        "subdirectory-of-a-repository": upstream.root / "profiles",
    }[where]
    cat = _catalog(upstream, profile("analyst", "reviewer-one"), profile("reviewer-one", "analyst"))
    with pytest.raises(InvalidInput) as caught:
        _verify(cat, root)
    assert caught.value.code == "source_root_not_git"
    assert caught.value.exit_code == 2


class _MemoryReader:
    """A reader with no git behind it: ``files`` maps (commit, path) to bytes; ``unreadable`` paths
    raise like a reader that gave up."""

    def __init__(self, files: dict[tuple[str, str], bytes], unreadable: frozenset[str] = frozenset()) -> None:
        self.files = files
        self.unreadable = unreadable
        self.reads: list[tuple[str, str]] = []

    @property
    def root(self) -> Path:
        return Path("/memory")

    def has_commit(self, commit: str) -> bool:
        return any(known == commit for known, _ in self.files)

    def read_blob(self, commit: str, path: str) -> bytes | None:
        self.reads.append((commit, path))
        if path in self.unreadable:
            raise TimeoutError(f"gave up reading {path} at {commit}")
        return self.files.get((commit, path))


def test_the_comparison_needs_only_a_reader_and_reads_each_blob_once() -> None:
    commit = "a" * 40
    data = catalog(
        _pinned("analyst", "profiles/analyst.md", _sha(NEW_TEXT)),
        _pinned("again", "profiles/analyst.md", _sha(NEW_TEXT)),
        _pinned("slow", "profiles/slow.md", _sha(NEW_TEXT)),
        _pinned("elsewhere", "profiles/analyst.md", _sha(NEW_TEXT), "b" * 40),
        profile("reviewer-one", "analyst", local_provenance()),
    )
    data["upstream"]["commit"] = commit
    reader = _MemoryReader({(commit, "profiles/analyst.md"): NEW_TEXT}, frozenset({"profiles/slow.md"}))
    result = verify_sources(CatalogFile.model_validate(data), reader)
    checks = {check.id: check for check in result.profiles}
    assert _statuses(result) == {
        "analyst": "ok",
        "again": "ok",
        "slow": "missing",
        "elsewhere": "missing",
        "reviewer-one": "local",
    }
    assert checks["slow"].detail == f"gave up reading profiles/slow.md at {commit}"
    assert checks["elsewhere"].detail == f"commit {'b' * 40} is not in the repository at /memory"
    assert reader.reads.count((commit, "profiles/analyst.md")) == 1


# ------------------------------------------------------------------------------- the licence copy


def _pin(**changes: Any) -> UpstreamPin:
    fields: dict[str, Any] = {
        "repository": "https://github.com/example/profile-library",
        "commit": "a" * 40,
        "license": "MIT",
        "license_path": "LICENSE",
        "license_sha256": _sha(LICENSE_TEXT),
    }
    return UpstreamPin.model_validate(fields | changes)


def test_licence_copy_with_the_recorded_bytes_is_ok() -> None:
    check = check_license_copy(_pin(), LicenseCopy("third_party/profile-library/LICENSE", LICENSE_TEXT))
    assert check is not None
    assert check.status is SourceStatus.OK
    assert check.id == LICENSE_COPY_CHECK_ID
    assert (check.path, check.commit, check.actual_sha256) == (
        "third_party/profile-library/LICENSE",
        None,
        _sha(LICENSE_TEXT),
    )


@pytest.mark.parametrize(
    "tampered",
    [
        LICENSE_TEXT.replace(b"granted", b"refused"),
        LICENSE_TEXT.replace(b"\n", b"\r\n"),
        LICENSE_TEXT.rstrip(b"\n"),
        b"\xef\xbb\xbf" + LICENSE_TEXT,
    ],
    ids=["edited-word", "crlf-line-endings", "no-final-newline", "utf8-bom"],
)
def test_licence_copy_that_differs_by_any_byte_is_a_mismatch_naming_both_hashes(tampered: bytes) -> None:
    check = check_license_copy(_pin(), LicenseCopy("kept/LICENSE", tampered))
    assert check is not None and check.status is SourceStatus.MISMATCH
    assert _sha(tampered) in check.detail and _sha(LICENSE_TEXT) in check.detail
    assert check.actual_sha256 == _sha(tampered)


def test_licence_copy_that_could_not_be_read_is_missing_with_the_reason() -> None:
    check = check_license_copy(_pin(), LicenseCopy("kept/LICENSE", None, "the file does not exist"))
    assert check is not None and check.status is SourceStatus.MISSING
    assert check.detail == "no copy of the upstream licence at kept/LICENSE: the file does not exist"


def test_pin_without_a_licence_hash_has_no_copy_to_check() -> None:
    assert check_license_copy(_pin(license_sha256=None), LicenseCopy("kept/LICENSE", LICENSE_TEXT)) is None


@pytest.mark.parametrize(
    ("repository", "expected"),
    [
        ("https://github.com/msitarzewski/agency-agents", "agency-agents/LICENSE"),
        ("https://example.org/profiles.git", "profiles/LICENSE"),
        ("https://example.org/group/profiles/", "profiles/LICENSE"),
        ("https://example.org/..", None),
        ("https://example.org/a b", None),
    ],
)
def test_licence_copy_lives_under_the_repository_name(repository: str, expected: str | None) -> None:
    assert license_copy_path(_pin(repository=repository)) == expected


def test_a_failing_licence_copy_fails_the_whole_verification() -> None:
    commit = "a" * 40
    data = catalog(
        _pinned("analyst", "profiles/analyst.md", _sha(NEW_TEXT)),
        profile("reviewer-one", "analyst", local_provenance()),
    )
    data["upstream"] |= {"commit": commit, "license_path": "LICENSE", "license_sha256": _sha(LICENSE_TEXT)}
    reader = _MemoryReader({(commit, "profiles/analyst.md"): NEW_TEXT, (commit, "LICENSE"): LICENSE_TEXT})
    cat = CatalogFile.model_validate(data)

    intact = verify_sources(cat, reader, LicenseCopy("kept/LICENSE", LICENSE_TEXT))
    tampered = verify_sources(cat, reader, LicenseCopy("kept/LICENSE", LICENSE_TEXT + b"extra\n"))

    assert intact.verified is True
    assert intact.license_copy is not None and intact.license_copy.status is SourceStatus.OK
    assert tampered.license is not None and tampered.license.status is SourceStatus.OK
    assert tampered.license_copy is not None and tampered.license_copy.status is SourceStatus.MISMATCH
    assert tampered.verified is False


def test_the_committed_third_party_licence_is_the_one_the_shipped_catalog_records() -> None:
    pin = CatalogFile.model_validate(shipped_catalog_data()).upstream
    relative = license_copy_path(pin)
    assert relative == "agency-agents/LICENSE"
    kept = ROOT / "third_party" / relative
    assert kept == THIRD_PARTY_DIR / relative
    assert pin.license_sha256 is not None
    assert _sha(kept.read_bytes()) == pin.license_sha256
    check = check_license_copy(pin, LicenseCopy(str(kept), kept.read_bytes()))
    assert check is not None and check.status is SourceStatus.OK


@pytest.mark.parametrize("state", ["absent", "directory", "too-large"])
def test_reading_a_licence_copy_that_is_not_a_small_file_says_why(tmp_path: Path, state: str) -> None:
    path = tmp_path / "LICENSE"
    if state == "directory":
        path.mkdir()
    elif state == "too-large":
        path.write_bytes(b"x" * (MAX_LICENSE_COPY_BYTES + 1))
    data, problem = read_license_copy(path)
    assert data is None
    assert (
        problem
        == {
            "absent": "the file does not exist",
            "directory": "it is not a regular file",
            "too-large": f"it is larger than {MAX_LICENSE_COPY_BYTES} bytes",
        }[state]
    )
