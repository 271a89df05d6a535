"""The flags of a run's creation that its tier would not use: refused, never ignored (shared by
``specialists create`` and Mission Control's brief)."""

from __future__ import annotations

from contracts.enums import Tier
from contracts.errors import InvalidInput


def check_create_flags(tier: Tier | None, *, enqueue: bool, review_wave: bool) -> None:
    """Refuse flags a run of ``tier`` (``None``: the policy picks it) would not use, rather than
    ignore them: :class:`InvalidInput` ``enqueue_not_allowed`` (``--enqueue`` starts a read_only
    analysis at once; an edit tier waits for its digest-bound approval, a recommendation runs no
    analysis) and ``review_wave_needs_analysis`` (``--review-wave`` with ``--tier recommend``, which
    nobody reviews)."""
    if enqueue and tier is not None and tier is not Tier.READ_ONLY:
        raise InvalidInput(
            "enqueue_not_allowed",
            f"--enqueue starts a read_only analysis at once; a {tier.value} run "
            + (
                "runs no analysis"
                if tier is Tier.RECOMMEND
                else "waits for its digest-bound approval (`specialists approve`)"
            ),
        )
    if review_wave and tier is Tier.RECOMMEND:
        raise InvalidInput(
            "review_wave_needs_analysis",
            "a review wave (--review-wave) asks for more reviewers of an analysis; a recommend run "
            "makes none to review",
        )
