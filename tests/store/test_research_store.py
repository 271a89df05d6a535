"""Research cases, evidence records and stored job outputs in the store (SQLite and PostgreSQL).

A case is stored with its subject and evidence in the order given; the store computes each record's
sha256 from its content and numbers the records. Evidence is added all or nothing and deactivated,
never edited; each change of the active records changes the evidence digest. Every write needs a
registered actor, and a refused write changes nothing. Job outputs are written once per job id: a
retried write of the same output returns the stored record, a different one is refused. Migration
0008 adds the three tables to a store at 0007 and its downgrade drops them again.
"""

from __future__ import annotations

import datetime as dt
import threading
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, inspect, select, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from contracts.errors import InvalidInput, NotFound, Refused
from contracts.hashing import canonical_sha256
from contracts.research import (
    CASE_ID_PATTERN,
    EVIDENCE_ID_PATTERN,
    MAX_EVIDENCE_CONTENT_BYTES,
    CaseInput,
    CaseSubject,
    EvidenceInput,
    EvidenceKind,
    JobOutputRecord,
    ResearchCase,
    content_sha256,
    evidence_digest,
)
from store import Store, open_store
from store.database import parse_database_url
from store.engine import create_store_engine, writing
from store.migrate import alembic_config
from store.schema import SCHEMA_REVISION, ResearchCaseRow, ResearchEvidenceRow, ResearchJobOutputRow
from tests.identity import insert_legacy_actor

NOW = dt.datetime(2027, 1, 3, 10, 0, tzinfo=dt.UTC)
SUBJECT = CaseSubject(kind="vulnerability", identifier="CVE-2026-0001", title="Heap overflow in the parser")
TEAM = "RTM-0123456789ABCDEF"


class Clock:
    """A store clock that moves one minute on each reading."""

    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> dt.datetime:
        self.now += dt.timedelta(minutes=1)
        return self.now


@pytest.fixture
def clocked(store: Store, actor: str) -> Store:
    """The test store, ``alice`` registered, with a clock that moves a minute per write."""
    return Store(store.engine, clock=Clock())


def evidence(
    content: str, kind: EvidenceKind = EvidenceKind.CODE, source: str = "repo@abc:src/x.c"
) -> EvidenceInput:
    return EvidenceInput(kind=kind, content=content, source_ref=source)


def case_input(*items: EvidenceInput) -> CaseInput:
    return CaseInput(subject=SUBJECT, evidence=list(items) or [evidence("int main(void) { return 0; }")])


def digest_of(case: ResearchCase) -> str:
    return evidence_digest([(record.evidence_id, record.sha256) for record in case.active_evidence])


def counts(store: Store) -> tuple[int, int, int]:
    """Rows in research_cases, research_evidence and research_job_outputs."""
    with Session(store.engine) as session:
        cases, evidence, outputs = (
            session.scalar(select(func.count()).select_from(table)) or 0
            for table in (ResearchCaseRow, ResearchEvidenceRow, ResearchJobOutputRow)
        )
    return cases, evidence, outputs


# ----------------------------------------------------------------------------------------------- cases


def test_a_created_case_reads_back_with_its_evidence_in_order_and_store_computed_digests(
    clocked: Store, actor: str
) -> None:
    items = [
        evidence("memcpy(buf, src, len);", EvidenceKind.CODE),
        evidence("trace: SIGSEGV in parse()", EvidenceKind.TRACE, "trace:42"),
        evidence("Looks exploitable to me — ünïcode", EvidenceKind.ANALYST_NOTE, "note:alice"),
    ]
    created = clocked.create_case(case_input(*items), actor)

    assert CASE_ID_PATTERN.fullmatch(created.case_id)
    assert created.subject == SUBJECT
    assert created.created_by == actor
    assert created.created_at.tzinfo is not None
    assert [(r.kind, r.content, r.source_ref) for r in created.evidence] == [
        (i.kind, i.content, i.source_ref) for i in items
    ]
    for record in created.evidence:
        assert EVIDENCE_ID_PATTERN.fullmatch(record.evidence_id)
        assert record.case_id == created.case_id
        assert record.sha256 == content_sha256(record.content)
        assert record.active and record.added_by == actor and record.added_at == created.created_at
        assert record.deactivated_by is None and record.deactivated_at is None
    assert len({record.evidence_id for record in created.evidence}) == 3
    assert clocked.get_case(created.case_id) == created


def test_evidence_content_is_stored_exactly_as_given(clocked: Store, actor: str) -> None:
    content = "  leading spaces\r\n\ttabs, \x1b[31mescapes\x1b[0m, ✓ unicode and a trailing newline\n"
    created = clocked.create_case(case_input(evidence(content)), actor)
    [record] = clocked.get_case(created.case_id).evidence
    assert record.content == content
    assert record.sha256 == content_sha256(content)


def test_evidence_content_with_a_nul_character_is_refused_on_every_backend(
    clocked: Store, actor: str
) -> None:
    with pytest.raises(InvalidInput) as raised:
        clocked.create_case(case_input(evidence("fine"), evidence("bin\x00ary")), actor)
    assert raised.value.code == "invalid_evidence"
    assert "evidence[1]" in raised.value.message and "NUL" in raised.value.message
    assert counts(clocked) == (0, 0, 0)


def test_the_largest_evidence_content_is_accepted(clocked: Store, actor: str) -> None:
    content = "x" * MAX_EVIDENCE_CONTENT_BYTES
    created = clocked.create_case(case_input(evidence(content)), actor)
    assert clocked.get_case(created.case_id).evidence[0].content == content


def test_cases_are_listed_newest_first_with_their_evidence(clocked: Store, actor: str) -> None:
    first = clocked.create_case(case_input(evidence("one")), actor)
    second = clocked.create_case(case_input(evidence("two"), evidence("three")), actor)
    assert clocked.list_cases() == [second, first]


def test_a_store_without_cases_lists_none(store: Store) -> None:
    assert store.list_cases() == []


def test_creating_a_case_as_an_unregistered_actor_is_refused_and_writes_nothing(clocked: Store) -> None:
    with pytest.raises(NotFound) as raised:
        clocked.create_case(case_input(), "mallory")
    assert raised.value.code == "unknown_actor"
    assert counts(clocked) == (0, 0, 0)


def test_evidence_given_by_path_must_be_read_before_the_store_takes_it(clocked: Store, actor: str) -> None:
    unread = CaseInput(
        subject=SUBJECT,
        evidence=[
            evidence("fine"),
            EvidenceInput(kind=EvidenceKind.TRACE, path="trace.txt", source_ref="t:1"),
        ],
    )
    with pytest.raises(InvalidInput) as raised:
        clocked.create_case(unread, actor)
    assert raised.value.code == "evidence_path_unresolved"
    assert "evidence[1]" in raised.value.message
    assert counts(clocked) == (0, 0, 0)


def test_getting_a_malformed_case_id_is_invalid_input(store: Store) -> None:
    for bad in ("", "RSC-abc", "RSC-0123456789AB\n", "SOR-0123456789ABCDEF", "rsc-0123456789AB"):
        with pytest.raises(InvalidInput) as raised:
            store.get_case(bad)
        assert raised.value.code == "invalid_case_id"


def test_getting_an_unknown_case_is_not_found(store: Store) -> None:
    with pytest.raises(NotFound) as raised:
        store.get_case("RSC-000000000000")
    assert raised.value.code == "unknown_case"


# -------------------------------------------------------------------------------------------- evidence


def test_added_evidence_follows_the_existing_records_and_changes_the_digest(
    clocked: Store, actor: str
) -> None:
    created = clocked.create_case(case_input(evidence("one"), evidence("two")), actor)
    added = clocked.add_evidence(
        created.case_id,
        [evidence("three", EvidenceKind.TRACE), evidence("four", EvidenceKind.SUMMARY)],
        actor,
    )
    assert [record.content for record in added] == ["three", "four"]
    assert all(record.sha256 == content_sha256(record.content) for record in added)

    after = clocked.get_case(created.case_id)
    assert [record.content for record in after.evidence] == ["one", "two", "three", "four"]
    assert after.evidence[2:] == added
    assert added[0].added_at > created.created_at
    assert digest_of(after) != digest_of(created)


def test_adding_evidence_is_all_or_nothing(clocked: Store, actor: str) -> None:
    created = clocked.create_case(case_input(evidence("one")), actor)
    batch = [evidence("two"), EvidenceInput(kind=EvidenceKind.CODE, path="later.c", source_ref="x")]
    with pytest.raises(InvalidInput) as raised:
        clocked.add_evidence(created.case_id, batch, actor)
    assert raised.value.code == "evidence_path_unresolved"
    assert clocked.get_case(created.case_id) == created
    assert counts(clocked) == (1, 1, 0)


def test_a_database_failure_midway_through_adding_evidence_adds_none(
    clocked: Store, actor: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    created = clocked.create_case(case_input(evidence("one")), actor)
    from store import research

    ids = iter(["EVD-AAAAAAAAAAAA", created.evidence[0].evidence_id])  # the second collides
    monkeypatch.setattr(research, "new_evidence_id", lambda: next(ids))
    with pytest.raises(IntegrityError):
        clocked.add_evidence(created.case_id, [evidence("two"), evidence("three")], actor)
    assert clocked.get_case(created.case_id) == created


def test_adding_evidence_to_an_unknown_case_or_as_an_unknown_actor_is_not_found(
    clocked: Store, actor: str
) -> None:
    created = clocked.create_case(case_input(), actor)
    with pytest.raises(NotFound) as unknown_case:
        clocked.add_evidence("RSC-000000000000", [evidence("x")], actor)
    assert unknown_case.value.code == "unknown_case"
    with pytest.raises(NotFound) as unknown_actor:
        clocked.add_evidence(created.case_id, [evidence("x")], "mallory")
    assert unknown_actor.value.code == "unknown_actor"
    assert clocked.get_case(created.case_id) == created


def test_a_deactivated_record_stays_with_its_content_and_leaves_the_digest(
    clocked: Store, actor: str
) -> None:
    created = clocked.create_case(case_input(evidence("one"), evidence("two")), actor)
    target = created.evidence[0]
    record = clocked.deactivate_evidence(created.case_id, target.evidence_id, actor)

    assert not record.active
    assert record.deactivated_by == actor and record.deactivated_at is not None
    assert (record.content, record.sha256) == (target.content, target.sha256)
    after = clocked.get_case(created.case_id)
    assert after.evidence[0] == record
    assert [r.evidence_id for r in after.active_evidence] == [created.evidence[1].evidence_id]
    assert digest_of(after) != digest_of(created)
    assert digest_of(after) == evidence_digest(
        [(created.evidence[1].evidence_id, created.evidence[1].sha256)]
    )


def test_deactivating_a_record_twice_is_refused(clocked: Store, actor: str) -> None:
    created = clocked.create_case(case_input(evidence("one"), evidence("two")), actor)
    first = clocked.deactivate_evidence(created.case_id, created.evidence[0].evidence_id, actor)
    with pytest.raises(Refused) as raised:
        clocked.deactivate_evidence(created.case_id, created.evidence[0].evidence_id, actor)
    assert raised.value.code == "evidence_inactive"
    assert raised.value.exit_code == 4
    assert clocked.get_case(created.case_id).evidence[0] == first


def test_deactivating_a_record_of_another_case_is_not_found(clocked: Store, actor: str) -> None:
    one = clocked.create_case(case_input(evidence("one")), actor)
    other = clocked.create_case(case_input(evidence("other")), actor)
    with pytest.raises(NotFound) as raised:
        clocked.deactivate_evidence(one.case_id, other.evidence[0].evidence_id, actor)
    assert raised.value.code == "unknown_evidence"
    assert clocked.get_case(other.case_id) == other
    with pytest.raises(NotFound) as missing:
        clocked.deactivate_evidence(one.case_id, "EVD-000000000000", actor)
    assert missing.value.code == "unknown_evidence"


def test_deactivating_as_an_unknown_actor_or_with_a_malformed_id_changes_nothing(
    clocked: Store, actor: str
) -> None:
    created = clocked.create_case(case_input(evidence("one")), actor)
    evidence_id = created.evidence[0].evidence_id
    with pytest.raises(NotFound) as unknown_actor:
        clocked.deactivate_evidence(created.case_id, evidence_id, "mallory")
    assert unknown_actor.value.code == "unknown_actor"
    with pytest.raises(InvalidInput) as malformed:
        clocked.deactivate_evidence(created.case_id, "EVD-short", actor)
    assert malformed.value.code == "invalid_evidence_id"
    assert clocked.get_case(created.case_id) == created


def test_a_correction_is_a_new_record_and_the_digest_differs_from_both_before_states(
    clocked: Store, actor: str
) -> None:
    created = clocked.create_case(case_input(evidence("wrong excerpt")), actor)
    [corrected] = clocked.add_evidence(created.case_id, [evidence("right excerpt")], actor)
    clocked.deactivate_evidence(created.case_id, created.evidence[0].evidence_id, actor)
    final = clocked.get_case(created.case_id)
    assert [r.content for r in final.active_evidence] == ["right excerpt"]
    assert [r.content for r in final.evidence] == ["wrong excerpt", "right excerpt"]
    assert digest_of(final) == evidence_digest([(corrected.evidence_id, corrected.sha256)])
    assert digest_of(final) != digest_of(created)


# ----------------------------------------------------------------------------------------- job outputs


def job_output(job_id: str = f"{TEAM}/stage-1/primary", **changes: Any) -> JobOutputRecord:
    output: dict[str, object] = changes.pop(
        "output", {"findings": [{"title": "overflow", "confidence": 0.7}]}
    )
    pack: dict[str, object] | None = changes.pop("pack", {"evidence": ["EVD-AAAAAAAAAAAA"], "stage": 1})
    fields: dict[str, Any] = {
        "job_id": job_id,
        "team_id": TEAM,
        "kind": "primary",
        "profile_id": "security-researcher",
        "model_id": "replay:demo",
        "output": output,
        "output_sha256": canonical_sha256(output),
        "pack": pack,
        "pack_sha256": None if pack is None else canonical_sha256(pack),
    }
    fields.update(changes)
    return JobOutputRecord(**fields)


def test_a_job_output_is_stored_once_and_read_back(clocked: Store) -> None:
    saved = clocked.save_job_output(job_output())
    assert saved == job_output().model_copy(update={"created_at": saved.created_at})
    assert saved.created_at is not None and saved.created_at > NOW
    assert clocked.get_job_output(saved.job_id) == saved


def test_saving_the_same_job_output_again_returns_the_stored_record(clocked: Store) -> None:
    first = clocked.save_job_output(job_output())
    again = clocked.save_job_output(job_output())
    assert again == first
    assert counts(clocked) == (0, 0, 1)


def test_a_different_output_for_a_stored_job_is_refused(clocked: Store) -> None:
    first = clocked.save_job_output(job_output())
    for changed in (job_output(output={"findings": []}), job_output(model_id="replay:other")):
        with pytest.raises(Refused) as raised:
            clocked.save_job_output(changed)
        assert raised.value.code == "job_output_conflict"
    assert clocked.get_job_output(first.job_id) == first


def test_a_job_output_whose_digest_is_not_its_canonical_sha256_is_refused(clocked: Store) -> None:
    with pytest.raises(InvalidInput) as wrong_output:
        clocked.save_job_output(job_output(output_sha256="0" * 64))
    assert wrong_output.value.code == "job_output_digest_mismatch"
    with pytest.raises(InvalidInput) as wrong_pack:
        clocked.save_job_output(job_output(pack_sha256="f" * 64))
    assert wrong_pack.value.code == "job_output_digest_mismatch"
    with pytest.raises(InvalidInput) as pack_without_digest:
        clocked.save_job_output(job_output(pack_sha256=None))
    assert pack_without_digest.value.code == "invalid_job_output"
    assert counts(clocked) == (0, 0, 0)


def test_a_job_output_without_a_pack_is_stored_with_none(clocked: Store) -> None:
    saved = clocked.save_job_output(job_output(pack=None))
    assert (saved.pack, saved.pack_sha256) == (None, None)
    assert clocked.get_job_output(saved.job_id) == saved


def test_a_team_lists_its_job_outputs_in_the_order_they_were_stored(clocked: Store) -> None:
    names = ["stage-2/review", "stage-1/primary", "stage-1/review"]
    saved = [clocked.save_job_output(job_output(f"{TEAM}/{name}")) for name in names]
    clocked.save_job_output(job_output("RTM-OTHER/stage-1/primary", team_id="RTM-OTHER"))
    assert clocked.team_job_outputs(TEAM) == saved
    assert clocked.team_job_outputs("RTM-NONE") == []


def test_an_unknown_job_output_is_not_found(store: Store) -> None:
    with pytest.raises(NotFound) as raised:
        store.get_job_output("no-such-job")
    assert raised.value.code == "unknown_job_output"


def test_of_writers_racing_to_store_one_job_output_one_inserts_and_all_get_it(
    store: Store, database_url: str
) -> None:
    stores = [open_store(database_url, create=False) for _ in range(4)]
    results: list[JobOutputRecord] = []
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(stores))

    def save(own: Store) -> None:
        try:
            barrier.wait(timeout=30)
            results.append(own.save_job_output(job_output()))
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=save, args=(own,)) for own in stores]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    finally:
        for own in stores:
            own.close()
    assert errors == []
    assert len(results) == len(stores) and all(result == results[0] for result in results)
    assert counts(store) == (0, 0, 1)


# ------------------------------------------------------------------------------------------- migration


def test_migration_0008_upgrades_a_store_at_0007_and_downgrades_cleanly(database_url: str) -> None:
    from alembic import command

    tables = {"research_cases", "research_evidence", "research_job_outputs"}
    parsed = parse_database_url(database_url)
    if parsed.get_backend_name() == "sqlite":
        assert parsed.database is not None
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_store_engine(parsed, create=True)
    config = alembic_config()
    try:
        with writing(engine).begin() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, "0007")
        with engine.connect() as connection:
            assert not tables & set(inspect(connection).get_table_names())
        with writing(engine).begin() as connection:
            insert_legacy_actor(connection)
    finally:
        engine.dispose()

    with open_store(database_url) as upgraded:
        with upgraded.engine.connect() as connection:
            assert tables <= set(inspect(connection).get_table_names())
            assert connection.scalar(text("SELECT version_num FROM alembic_version")) == SCHEMA_REVISION
        created = upgraded.create_case(case_input(), "alice")
        assert upgraded.get_case(created.case_id) == created

        with writing(upgraded.engine).begin() as connection:
            config.attributes["connection"] = connection
            command.downgrade(config, "0007")
        with upgraded.engine.connect() as connection:
            assert not tables & set(inspect(connection).get_table_names())
            assert connection.scalar(text("SELECT count(*) FROM actors")) == 1
