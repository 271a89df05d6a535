"""The names of the project's own metrics (docs/architecture.md "Observability"), exported with the Temporal
SDK's on the Prometheus endpoint of ``SPECIALISTS_METRICS_ADDRESS``. Emitted through the SDK's metric
meter (``workflow.metric_meter()`` in workflow code — silent during replay, so a transition is
counted once — and ``activity.metric_meter()`` in activities); labels are low-cardinality enums and
model ids, never a run id or any operator text."""

from __future__ import annotations

from typing import Final

RUN_STATUS_CHANGES: Final = "specialists_run_status_changes"
"""Counter: a run moved to a status (labels ``status``, ``tier``)."""

MODEL_CALLS: Final = "specialists_model_calls"
"""Counter: one model call ended (labels ``model``, ``kind``, ``outcome``: ``ok`` or the error class)."""

MODEL_FALLBACKS: Final = "specialists_model_fallbacks"
"""Counter: a job left a model for the next in its chain (labels ``model``, ``error_type``)."""

CEILING_LEASES_HELD: Final = "specialists_ceiling_leases_held"
"""Gauge: leases a model's ceiling holds now (labels ``model``, ``ceiling``)."""

CEILING_ALLOWANCE: Final = "specialists_ceiling_allowance"
"""Gauge: leases a model's ceiling allows now, the ramp's allowance (labels ``model``, ``ceiling``)."""

CEILING_RATE_LIMITED: Final = "specialists_ceiling_rate_limited"
"""Counter: a call was given back to a model's ceiling as rate limited, halving its allowance
(label ``model``)."""

QUEUE_SLOTS_OCCUPIED: Final = "specialists_queue_slots_occupied"
"""Gauge: the goal queue's occupied slots (label ``slots``: the capacity)."""
