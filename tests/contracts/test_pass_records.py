"""The controls in a pass's record (``contracts.pass_records.pass_controls``): every model pass is
text only — no tools, no network; an edit tier's passes ask for an approval of the contract digest
and record the approval seen, and whether its digest is the contract's."""

from __future__ import annotations

from contracts.pass_records import ApprovalControl, SandboxControl, pass_controls

DIGEST = "a" * 64


def test_a_read_only_pass_asks_for_no_approval_and_sees_none() -> None:
    requested, observed = pass_controls(
        edit_tier=False, contract_sha256=DIGEST, approved_by=None, approved_digest=None
    )
    assert requested == observed
    assert (requested.sandbox, requested.tools, requested.network) == (SandboxControl.TEXT_ONLY, [], False)
    assert (requested.approval, requested.approved_digest) == (ApprovalControl.NOT_REQUIRED, None)


def test_an_edit_tier_pass_asks_for_the_contract_digest_and_records_the_approval_seen() -> None:
    requested, observed = pass_controls(
        edit_tier=True, contract_sha256=DIGEST, approved_by="alice", approved_digest=DIGEST
    )
    assert (requested.approval, requested.approved_digest, requested.approved_by) == (
        ApprovalControl.CONTRACT_DIGEST, DIGEST, None,
    )  # fmt: skip
    assert (observed.approved_by, observed.approved_digest, observed.digest_matches) == (
        "alice",
        DIGEST,
        True,
    )


def test_an_approval_of_another_digest_or_none_at_all_is_recorded_as_seen_never_as_matching() -> None:
    _, other = pass_controls(
        edit_tier=True, contract_sha256=DIGEST, approved_by="bob", approved_digest="b" * 64
    )
    assert other.digest_matches is False and other.approved_by == "bob"
    _, missing = pass_controls(edit_tier=True, contract_sha256=DIGEST, approved_by=None, approved_digest=None)
    assert (missing.approved_by, missing.digest_matches) == (None, None)
