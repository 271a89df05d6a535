"""The queue diff of intake findings: matched by fingerprint and status, never by date."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from activities.intake_scan import scan_repository_at
from contracts.intake_diff import apply_intake
from contracts.intake_source import IntakeSubKind
from contracts.queue_archive import tombstone
from contracts.queue_items import QueueEventKind, QueueItem, QueueStatus
from contracts.queue_keys import KeyAllocator
from contracts.queue_transitions import Mover, QueueMove, apply_move
from tests.activities.intake_repository import make_intake_repository
from tests.store.git_repository import git

AT = dt.datetime(2026, 12, 4, tzinfo=dt.UTC)


def _scan(
    repo: Path, items: list[QueueItem], allocator: KeyAllocator, *, sweep: str | None = None
) -> tuple[dict[str, QueueItem], KeyAllocator, object]:
    applied = apply_intake(
        scan_repository_at(repo, "demo", "main"), items, allocator, at=AT, actor="alice", sweep=sweep
    )
    held = {item.key: item for item in items}
    held.update({item.key: item for item in applied.items})
    return held, applied.allocator, applied.answer


def test_two_scans_make_no_duplicate_proposals(tmp_path: Path) -> None:
    repo = make_intake_repository(tmp_path)
    items, allocator, first = _scan(repo, [], KeyAllocator())
    assert len(first.proposed) == len(items) and first.already_queued == []
    assert all(item.status is QueueStatus.PROPOSAL and item.intake is not None for item in items.values())
    assert {item.key.split("-")[0] for item in items.values()} == {"DEM"}
    again, _, second = _scan(repo, list(items.values()), allocator)
    assert second.proposed == [] and len(second.already_queued) == len(items)
    assert again == items


def test_a_changed_quote_updates_its_proposal_and_keeps_the_operators_sections(tmp_path: Path) -> None:
    repo = make_intake_repository(tmp_path)
    items, allocator, _ = _scan(repo, [], KeyAllocator())
    key = next(
        k
        for k, item in items.items()
        if item.intake and item.intake.quote == "# TODO: handle the empty order list"
    )
    items[key] = items[key].model_copy(
        update={"scope": items[key].scope.model_copy(update={"tests": "my tests"})}
    )
    text = (repo / "src" / "app.py").read_text().replace("the empty order list", "an empty order list")
    (repo / "src" / "app.py").write_text(text)
    git(repo, "add", "src/app.py")
    git(repo, "commit", "--quiet", "--no-gpg-sign", "-m", "reword")
    after, _, answer = _scan(repo, list(items.values()), allocator)
    assert [row.key for row in answer.updated] == [key]
    assert [(row.sub_kind, row.path) for row in answer.proposed] == [(IntakeSubKind.UNPUSHED_COMMITS, "main")]
    updated = after[key]
    assert updated.intake is not None and updated.intake.quote == "# TODO: handle an empty order list"
    assert "an empty order list" in updated.title and "an empty order list" in updated.scope.evidence
    assert updated.scope.tests == "my tests"
    assert updated.events[-1].kind is QueueEventKind.INTAKE_UPDATED
    assert updated.events[-1].data["previous_fingerprint"] == items[key].intake.fingerprint  # type: ignore[union-attr]
    assert len(after) == len(items) + 1  # main's new commit is on no remote-tracking branch


def test_a_rejected_items_finding_is_not_proposed_again(tmp_path: Path) -> None:
    repo = make_intake_repository(tmp_path)
    items, allocator, _ = _scan(repo, [], KeyAllocator())
    key = next(iter(items))
    items[key] = apply_move(items[key], QueueMove.REJECT, Mover.OPERATOR, at=AT, actor="alice", reason="no")
    after, _, answer = _scan(repo, list(items.values()), allocator)
    assert [(row.key, row.status) for row in answer.not_reproposed] == [(key, QueueStatus.REJECTED)]
    assert answer.proposed == [] and after[key].status is QueueStatus.REJECTED


def test_an_archived_items_finding_is_not_proposed_again(tmp_path: Path) -> None:
    repo = make_intake_repository(tmp_path)
    items, allocator, _ = _scan(repo, [], KeyAllocator())
    key = next(iter(items))
    rejected = apply_move(items[key], QueueMove.REJECT, Mover.OPERATOR, at=AT, actor="alice", reason="no")
    kept = [item for other, item in items.items() if other != key]
    applied = apply_intake(
        scan_repository_at(repo, "demo", "main"),
        kept,
        allocator,
        at=AT,
        actor="alice",
        archived=[tombstone(rejected, AT)],
    )
    assert [(row.key, row.status) for row in applied.answer.not_reproposed] == [(key, QueueStatus.REJECTED)]
    assert "archived" in applied.answer.not_reproposed[0].reason
    assert applied.answer.proposed == [] and applied.items == []


def test_a_changed_source_of_an_item_past_proposal_is_recorded_once(tmp_path: Path) -> None:
    repo = make_intake_repository(tmp_path)
    items, allocator, _ = _scan(repo, [], KeyAllocator())
    key = next(k for k, item in items.items() if item.intake and item.intake.path == "feature")
    approved = items[key].model_copy(update={"status": QueueStatus.APPROVED})
    items[key] = approved
    git(repo, "switch", "--quiet", "feature")
    (repo / "more.txt").write_text("more\n")
    git(repo, "add", "more.txt")
    git(repo, "commit", "--quiet", "--no-gpg-sign", "-m", "more")
    git(repo, "switch", "--quiet", "main")
    after, allocator, answer = _scan(repo, list(items.values()), allocator)
    assert key in [row.key for row in answer.recorded]
    assert after[key].events[-1].kind is QueueEventKind.INTAKE_CHANGED
    assert after[key].intake == approved.intake  # the approved contract is untouched
    again, _, second = _scan(repo, list(after.values()), allocator)
    assert second.recorded == [] and again[key] == after[key]


def test_a_sweeps_scan_names_the_sweep_in_every_event_it_writes_and_a_persons_scan_names_none(
    tmp_path: Path,
) -> None:
    repo = make_intake_repository(tmp_path)
    by_hand, _, _ = _scan(repo, [], KeyAllocator())
    assert all("sweep" not in item.events[0].data for item in by_hand.values())
    sweep = "intake-sweep-1"
    items, allocator, _ = _scan(repo, [], KeyAllocator(), sweep=sweep)
    added = [item.events[0] for item in items.values()]
    assert {(event.kind, event.actor, event.data["sweep"]) for event in added} == {
        (QueueEventKind.ADDED, "alice", sweep)
    }
    # A proposal whose source changed (intake_updated) and an item past proposal (intake_changed).
    todo = next(k for k, item in items.items() if item.intake and item.intake.quote.startswith("# TODO"))
    branch = next(k for k, item in items.items() if item.intake and item.intake.path == "feature")
    items[branch] = items[branch].model_copy(update={"status": QueueStatus.APPROVED})
    text = (repo / "src" / "app.py").read_text().replace("the empty order list", "an empty order list")
    (repo / "src" / "app.py").write_text(text)
    git(repo, "commit", "--quiet", "--no-gpg-sign", "-am", "reword")
    git(repo, "switch", "--quiet", "feature")
    (repo / "more.txt").write_text("more\n")
    git(repo, "add", "more.txt")
    git(repo, "commit", "--quiet", "--no-gpg-sign", "-m", "more")
    git(repo, "switch", "--quiet", "main")
    after, _, _ = _scan(repo, list(items.values()), allocator, sweep="intake-sweep-2")
    assert (after[todo].events[-1].kind, after[todo].events[-1].data["sweep"]) == (
        QueueEventKind.INTAKE_UPDATED,
        "intake-sweep-2",
    )
    assert (after[branch].events[-1].kind, after[branch].events[-1].data["sweep"]) == (
        QueueEventKind.INTAKE_CHANGED,
        "intake-sweep-2",
    )
