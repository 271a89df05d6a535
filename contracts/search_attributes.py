"""The deployment's custom search attributes, defined once (docs/architecture.md "Temporal
conventions"): every workflow that sets one, every client that filters or reads one, and the
registration on a server use these names. All are Keyword attributes.

``infra/register-search-attributes.sh`` cannot import Python; it lists the same names and a test
checks that it does.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final


class SearchAttribute(StrEnum):
    """A custom search attribute's registered name (all of type Keyword)."""

    SPECIALIST_STATUS = "SpecialistStatus"
    SPECIALIST_TIER = "SpecialistTier"
    SPECIALIST_PROFILE = "SpecialistProfile"
    SPECIALIST_REVIEWER = "SpecialistReviewer"
    RISK_LEVEL = "RiskLevel"
    REPO_ALIAS = "RepoAlias"
    RESEARCH_CASE_ID = "ResearchCaseId"
    TEAM_STATUS = "TeamStatus"
    QUEUE_ITEM_STATUS = "QueueItemStatus"


SEARCH_ATTRIBUTES: Final[tuple[str, ...]] = tuple(attribute.value for attribute in SearchAttribute)
"""What a server must have registered (in this order), by the dev-server launcher and by infra/."""
