"""What the worker and the operator surface both need to reach the outside: deployment settings, the
Temporal connection, the hardened git runner and logging setup (docs/architecture.md "Layers").
Imports only ``contracts``."""
