"""The text safety rules' names and what a scan reports (catalog.safety, its module docstring, says
what each rule covers)."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict

__all__ = ["SafetyFinding", "SafetyRule"]


class SafetyRule(StrEnum):
    """The name of a text safety rule (stable: it appears in validation reports)."""

    PROMPT_OVERRIDE = "prompt_override"
    CHAT_ROLE_MARKER = "chat_role_marker"
    POLICY_BYPASS = "policy_bypass"
    SECRET_ACCESS = "secret_access"
    DESTRUCTIVE_COMMAND = "destructive_command"
    PUBLICATION = "publication"
    DEPLOYMENT = "deployment"
    PUSH_MERGE_PR = "push_merge_pr"
    ACCESS_CHANGE = "access_change"
    DATA_TRANSFER = "data_transfer"
    INVISIBLE_CHARACTER = "invisible_character"
    HIDDEN_HTML_COMMENT = "hidden_html_comment"
    CONTROL_CHARACTER = "control_character"


class SafetyFinding(BaseModel):
    """One rule that a text broke. ``detail`` is the matched phrase (folded, as words) or ``U+XXXX``."""

    model_config = ConfigDict(frozen=True)

    rule: SafetyRule
    detail: str
