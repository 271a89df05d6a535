"""The spec pass's pure rules: a section is written only when it cites evidence the job was given and
the scope stays within its bounds; an operator's section is kept unless replace; ``file:PATH:LINE``
refs become the ``file:PATH`` a context pack reads."""

from __future__ import annotations

import datetime as dt

from contracts.queue_items import SCOPE_SECTIONS, ItemProposal, QueueItem, new_item
from contracts.queue_spec import apply_spec, content_sha256, pack_ref, spec_evidence

AT = dt.datetime(2026, 1, 2, tzinfo=dt.UTC)
GIVEN = ["file:src/app.py"]


def _item(**scope: str) -> QueueItem:
    proposal = ItemProposal(title="t", repo_alias="demo", evidence=["file:src/app.py:5"], scope=scope)
    return new_item(proposal, key="ORD-1", at=AT, actor="alice")


def test_a_section_over_the_scopes_bounds_is_refused_and_named_never_cut() -> None:
    answered = {name: ("x" * 1_500, GIVEN) for name in SCOPE_SECTIONS}
    outcome = apply_spec(_item(), answered, GIVEN, replace=False)
    assert outcome.written == list(SCOPE_SECTIONS[:4])
    assert set(outcome.refused) == set(SCOPE_SECTIONS[4:])
    assert all(why.startswith("out of bounds") for why in outcome.refused.values())


def test_an_unanswered_or_uncited_section_is_refused_and_an_operators_is_kept_unless_replace() -> None:
    item = _item(problem="mine")
    answered = {name: (f"{name} text", GIVEN) for name in SCOPE_SECTIONS if name != "tests"}
    answered["change"] = ("change text", ["file:other.py"])
    outcome = apply_spec(item, answered, GIVEN, replace=False)
    assert outcome.kept == ["problem"] and outcome.scope.problem == "mine"
    assert set(outcome.refused) == {"tests", "change"} and outcome.scope.change == ""
    replaced = apply_spec(item, answered, GIVEN, replace=True)
    assert replaced.scope.problem == "problem text" and replaced.kept == []


def test_file_refs_with_a_line_are_read_as_their_file_and_content_digest_follows_the_scope() -> None:
    assert pack_ref("file:docs/a%20b.md:12") == "file:docs/a b.md"
    assert pack_ref("commit:abc") == "commit:abc"
    assert spec_evidence(_item()) == ["file:src/app.py"]
    assert content_sha256(_item()) != content_sha256(_item(problem="p"))
