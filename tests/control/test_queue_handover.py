"""What ``queue done`` hands over (``control.queue_views.handover_json`` and its rendering), on views
made here: the accepted run, its contract digest and decision; an executed run's change; a pr_ready
run's complete patch file with where it is kept; nothing for what a run does not have."""

from __future__ import annotations

import datetime as dt

from contracts.enums import Tier
from contracts.runs import Decision, DecisionOutcome, RunStatus
from control.queue_views import handover_json, render_handover
from tests.control.test_show_execution import EVIDENCE, RUN_ID, executed_view, pr_ready_view, render_with

AT = dt.datetime(2026, 12, 2, 9, 0, tzinfo=dt.UTC)
ACCEPTED = Decision(actor="alice", outcome=DecisionOutcome.ACCEPTED, note="ORD-1: done", at=AT)


def test_a_pr_ready_run_hands_over_its_change_and_the_patch_file_with_where_it_is_kept() -> None:
    view = pr_ready_view()
    assert view.execution is not None and view.execution.location is not None
    here = view.execution.location.model_copy(update={"host": "worker-2"})
    execution = view.execution.model_copy(update={"location": here})
    view = view.model_copy(
        update={"status": RunStatus.ACCEPTED, "decision": ACCEPTED, "execution": execution}
    )
    handover = handover_json(view)
    assert handover["run_id"] == RUN_ID and handover["tier"] == "pr_ready"
    assert handover["contract_sha256"] == "c" * 64 and handover["decision"] == "accepted"
    assert handover["change"] == {"base_commit": "b" * 40, "files_changed": 5, "diff_sha256": "d" * 64}
    assert handover["patch"] == {
        "sha256": "9" * 64,
        "size_bytes": 1234,
        "path": f"{EVIDENCE}/pr-ready.patch",
        "host": "worker-2",
    }
    out = " ".join(render_with(lambda console: render_handover(console, handover)).split())
    assert "nothing was merged, pushed or published" in out
    assert f"{EVIDENCE}/pr-ready.patch on worker-2 (1234 bytes, sha256 {'9' * 64})" in out
    assert f"specialists show {RUN_ID} --diff" in out


def test_a_run_that_changed_nothing_hands_over_no_change_and_no_patch() -> None:
    view = executed_view().model_copy(
        update={"tier": Tier.READ_ONLY, "execution": None, "decision": ACCEPTED}
    )
    handover = handover_json(view)
    assert (handover["tier"], handover["change"], handover["patch"]) == ("read_only", None, None)
    out = render_with(lambda console: render_handover(console, handover))
    assert "patch file" not in out and "change" not in out.replace("nothing was merged", "")
