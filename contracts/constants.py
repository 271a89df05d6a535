"""Constants of the operator contract and of the deployment defaults (docs/architecture.md "Operator
contract", "Configuration")."""

from __future__ import annotations

from typing import Final

DEFAULT_TEMPORAL_ADDRESS: Final = "127.0.0.1:7233"
DEFAULT_TEMPORAL_UI_PORT: Final = 8233
DEFAULT_NAMESPACE: Final = "default"
DEFAULT_TASK_QUEUE: Final = "specialists"
DEFAULT_STATE_DIR: Final = ".specialists"

# WorkItem bounds (docs/architecture.md "Operator contract").
MAX_TITLE_CHARS: Final = 200
MAX_DESCRIPTION_CHARS: Final = 8_000
MAX_EVIDENCE_REFS: Final = 50
MAX_EVIDENCE_REF_CHARS: Final = 200
MAX_LIST_ITEMS: Final = 20
MAX_SHORT_TEXT_CHARS: Final = 64

# Budgets (docs/architecture.md "Run lifecycle").
MAX_CHANGED_FILES: Final = 40
