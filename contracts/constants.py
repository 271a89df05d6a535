"""Constants of the operator contract and of the deployment defaults (docs/architecture.md "Operator
contract", "Configuration")."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Final

DEFAULT_TEMPORAL_ADDRESS: Final = "127.0.0.1:7233"
DEFAULT_TEMPORAL_UI_PORT: Final = 8233
DEFAULT_NAMESPACE: Final = "default"
DEFAULT_TASK_QUEUE: Final = "specialists"
STATE_DIR_NAME: Final = "specialists"
"""The state directory's name under ``$XDG_STATE_HOME`` (or ``~/.local/state``)."""


def default_state_dir(environ: Mapping[str, str]) -> str:
    """The state directory when ``SPECIALISTS_STATE_DIR`` is not set: absolute, whatever the
    working directory (docs/architecture.md "Configuration").

    ``$XDG_STATE_HOME/specialists`` when ``XDG_STATE_HOME`` is an absolute path (the XDG base
    directory rules ignore a relative one), else ``$HOME/.local/state/specialists`` (the home
    directory from the password database when ``HOME`` is unset).
    """
    xdg = (environ.get("XDG_STATE_HOME") or "").strip()
    if xdg and os.path.isabs(xdg):
        return os.path.join(xdg, STATE_DIR_NAME)
    home = (environ.get("HOME") or "").strip() or os.path.expanduser("~")
    return os.path.join(home, ".local", "state", STATE_DIR_NAME)


# WorkItem bounds (docs/architecture.md "Operator contract").
MAX_TITLE_CHARS: Final = 200
MAX_DESCRIPTION_CHARS: Final = 8_000
MAX_EVIDENCE_REFS: Final = 50
MAX_EVIDENCE_REF_CHARS: Final = 200
MAX_LIST_ITEMS: Final = 20
MAX_SHORT_TEXT_CHARS: Final = 64

# Budgets (docs/architecture.md "Run lifecycle").
MAX_CHANGED_FILES: Final = 40
