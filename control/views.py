"""JSON shapes (docs/architecture.md "Operator contract") and rich renderings for the CLI's configuration
views.

Each ``*_json`` function returns the exact object ``--json`` prints; each ``render_*`` draws the same
facts for a person.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from control.output import safe_text, table

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from rich.console import Console

    from catalog.loaded import LoadedCatalog
    from catalog.sources import SourceVerification
    from catalog.validation import CatalogReport
    from contracts.config import (
        ActorRecord,
        ConfigurationEvent,
        PolicyRecord,
        RepositoryRecord,
        UnverifiedRecord,
    )
    from contracts.model_jobs import ModelCheckResult
    from contracts.models import ModelRecord, ModelSelectionRecord
    from contracts.orchestration import OrchestrationDecision
    from contracts.routing import RouteDecision


def _time(value: Any) -> str | None:
    """ISO 8601 UTC with ``Z`` (docs/architecture.md "Values")."""
    if value is None:
        return None
    return str(value.astimezone(_utc()).isoformat().replace("+00:00", "Z"))


def _utc() -> Any:
    import datetime as dt

    return dt.UTC


# ------------------------------------------------------------------------------------------------ catalog


def catalog_json(report: CatalogReport, verification: SourceVerification | None) -> dict[str, Any]:
    """``catalog --json``: validity, version, hash, upstream pin, profiles, violations."""
    catalog = report.catalog
    data: dict[str, Any] = {
        "valid": report.valid,
        "catalog_version": catalog.version if catalog else None,
        "schema_version": catalog.file.schema_version if catalog else None,
        "catalog_sha256": report.sha256,
        "upstream": None,
        "profiles": [],
        "violations": [violation.model_dump(mode="json") for violation in report.violations],
    }
    if catalog is not None:
        pin = catalog.file.upstream
        data["upstream"] = {"repository": pin.repository, "commit": pin.commit, "license": pin.license}
        data["profiles"] = [
            {
                "id": profile.id,
                "name": profile.name,
                "reviewer": profile.reviewer,
                "work_class": profile.work_class.value,
                "origin": profile.provenance.origin,
                "source_path": profile.provenance.source_path,
                "source_commit": profile.provenance.source_commit
                or (pin.commit if profile.provenance.origin == "upstream" else None),
                "sha256": profile.provenance.sha256,
                "license": profile.provenance.license,
                "reviewed_on": profile.provenance.reviewed_on.isoformat(),
            }
            for profile in catalog.file.profiles
        ]
    if verification is not None:
        data["verification"] = verification.model_dump(mode="json")
    return data


def render_catalog(console: Console, report: CatalogReport, verification: SourceVerification | None) -> None:
    """Profiles table (with verification status when checked), then every violation."""
    catalog = report.catalog
    if catalog is not None:
        statuses = {p.id: p.status for p in verification.profiles} if verification else {}
        columns = ["id", "name", "reviewer", "class", "source"]
        if verification:
            columns.append("verified")
        rows = []
        for profile in catalog.file.profiles:
            source = profile.provenance.source_path or f"local ({profile.provenance.local_reason or ''})"
            row = [profile.id, profile.name, profile.reviewer, profile.work_class.value, source]
            if verification:
                row.append(str(statuses.get(profile.id, "")))
            rows.append(row)
        pin = catalog.file.upstream
        console.print(
            table(
                f"catalog {catalog.version} — sha256 {report.sha256} — upstream {pin.repository}"
                f" @ {pin.commit[:12]} ({pin.license})",
                columns,
                rows,
            )
        )
    if report.violations:
        console.print(
            table(
                f"{len(report.violations)} violation(s): catalog is NOT valid",
                ["profile", "field", "rule", "message"],
                [[v.profile or "-", v.field, v.rule, v.message] for v in report.violations],
            )
        )
    else:
        console.print(f"valid: {len(catalog.file.profiles) if catalog else 0} profiles")
    if verification is not None:
        for check in (verification.license, verification.license_copy):
            if check is not None:
                console.print(safe_text(f"{check.id}: {check.status} ({check.detail})"))
        verdict = "verified" if verification.verified else "NOT verified (mismatch or missing source)"
        console.print(f"sources: {verdict}")


# -------------------------------------------------------------------------------------------------- route


def orchestration_rows(decision: OrchestrationDecision) -> list[list[str]]:
    """How a run is reviewed: the shape, the consequential domains, each reason and a wave's passes."""
    counted = ", ".join(domain.value for domain in decision.consequential) or "-"
    rows = [["review", f"{decision.shape.value} (consequential domains: {counted})"]]
    rows.extend(["review reason", reason] for reason in decision.reasons)
    rows.extend(
        [
            "review pass",
            f"{p.profile} on {', '.join(p.axes)}"
            + (f" ({p.model_class.value} model)" if p.model_class is not None else ""),
        ]
        for p in decision.roster
    )
    return rows


def render_route(
    console: Console, decision: RouteDecision, create_refusal: Mapping[str, str] | None = None
) -> None:
    """Primary, reviewer, risk, confidence, reasons, alternatives, gaps and tier preview, with the
    refusal ``create`` would give the previewed run (:func:`control.route_preview.create_refusal`)."""
    rows = [
        ["primary", decision.primary],
        ["reviewer", decision.reviewer],
        ["risk", decision.risk.value],
        ["confidence", f"{decision.confidence:.2f} (score {decision.score})"],
        ["task type", decision.task_type.value],
        ["repository", decision.repo_alias or "-"],
    ]
    if decision.override:
        rows.append(["override", f"{decision.override.profile}: {decision.override.reason}"])
    if decision.effective_tier is not None:
        rows.append(["effective tier", decision.effective_tier.value])
        rows.extend(["tier reason", reason] for reason in decision.tier_reasons or [])
    if create_refusal is not None:
        rows.append(["create would refuse", f"{create_refusal['code']}: {create_refusal['message']}"])
    if decision.orchestration is not None:
        rows.extend(orchestration_rows(decision.orchestration))
    rows.extend(["reason", reason] for reason in decision.reasons)
    rows.extend(["alternative", f"{alt.profile} ({alt.score})"] for alt in decision.alternatives)
    rows.extend(["evidence gap", gap] for gap in decision.evidence_gaps)
    console.print(table("route", ["", ""], rows))


# ------------------------------------------------------------------------------------------ configuration


def policy_json(record: PolicyRecord) -> dict[str, Any]:
    """``policy --json``: mode, ceiling, who set it and when (null for the built-in default)."""
    return {
        "mode": record.policy.mode.value,
        "maximum_automatic_tier": record.policy.maximum_automatic_tier.value,
        "set_by": record.set_by,
        "set_at": _time(record.set_at),
        "default": record.set_by is None,
    }


def render_policy(console: Console, record: PolicyRecord) -> None:
    data = policy_json(record)
    origin = "built-in default" if data["default"] else f"set by {data['set_by']} at {data['set_at']}"
    console.print(
        table(
            "automation policy",
            ["mode", "maximum automatic tier", "origin"],
            [[data["mode"], data["maximum_automatic_tier"], origin]],
        )
    )


def selection_json(record: ModelSelectionRecord | None) -> dict[str, Any] | None:
    """A model selection record as JSON, or ``None``."""
    if record is None:
        return None
    return {
        **record.selection.model_dump(mode="json"),
        "selected_by": record.selected_by,
        "selected_at": _time(record.selected_at),
    }


def model_json(record: ModelRecord) -> dict[str, Any]:
    """A registered model; ``api_key_env`` is the variable's name, never a key."""
    return {
        "id": record.id,
        "provider": record.provider,
        "name": record.name,
        "base_url": record.base_url,
        "api_key_env": record.api_key_env,
        "timeout_s": record.timeout_s,
        "ceiling": record.ceiling,
        "added_by": record.added_by,
        "added_at": _time(record.added_at),
        "active": record.active,
        "deactivated_by": record.deactivated_by,
        "deactivated_at": _time(record.deactivated_at),
        "recordings": record.recordings,
        "recordings_sha256": record.recordings_sha256,
    }


def models_json(
    current: ModelSelectionRecord | None,
    history: list[ModelSelectionRecord],
    registered: Sequence[ModelRecord] = (),
    ceilings: Sequence[dict[str, Any]] = (),
    class_pools: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """``models --json``: the current selection (null when none), the history, newest first, the
    registered models, by id, and the live ceiling of each leased model and of each model class's
    pool (``control.ceiling_status``)."""
    return {
        "selected": current is not None,
        "current": selection_json(current),
        "history": [selection_json(record) for record in history],
        "registered": [model_json(record) for record in registered],
        "ceilings": list(ceilings),
        "class_pools": list(class_pools),
    }


def render_models(
    console: Console,
    current: ModelSelectionRecord | None,
    history: list[ModelSelectionRecord],
    registered: Sequence[ModelRecord] = (),
    ceilings: Sequence[dict[str, Any]] = (),
) -> None:
    render_registered_models(console, registered)
    render_ceilings(console, ceilings)
    if current is None:
        console.print(
            "model selection: none selected — choose one with "
            "`specialists models select --primary provider:name --actor ID`"
        )
        return
    records = history or [current]
    console.print(
        table(
            "model selection (newest first)",
            [
                "primary",
                "fallbacks",
                "fallback mode",
                "support",
                "advisory",
                "effort",
                "selected by",
                "selected at",
            ],
            [
                [
                    r.selection.primary,
                    ", ".join(r.selection.fallbacks) or "-",
                    r.selection.fallback_mode.value,
                    r.selection.support or "-",
                    r.selection.advisory or "-",
                    ", ".join(f"{c.value} {e.value}" for c, e in r.selection.efforts.items()) or "-",
                    r.selected_by,
                    _time(r.selected_at) or "",
                ]
                for r in records
            ],
        )
    )


def model_check_json(result: ModelCheckResult) -> dict[str, Any]:
    """``models test --json``: ``{"check_id", "model", "ok", "latency_ms", "input_tokens",
    "output_tokens"}``, plus ``"error": {"code", "message"}`` (the error class) when the model failed."""
    data: dict[str, Any] = {
        "check_id": result.check_id,
        "model": result.model_id,
        "ok": result.ok,
        "latency_ms": result.usage.latency_ms,
        "input_tokens": result.usage.input_tokens,
        "output_tokens": result.usage.output_tokens,
    }
    if not result.ok:
        data["error"] = {"code": result.error_type or "model_task", "message": result.message or ""}
    return data


def render_model_check(console: Console, result: ModelCheckResult) -> None:
    usage = result.usage
    cost = [] if usage.latency_ms is None else [f"{usage.latency_ms} ms"]
    if usage.input_tokens is not None or usage.output_tokens is not None:
        cost.append(
            f"tokens in {usage.input_tokens if usage.input_tokens is not None else '?'}, out "
            f"{usage.output_tokens if usage.output_tokens is not None else '?'}"
        )
    suffix = f" ({'; '.join(cost)})" if cost else ""
    # The model id and the provider's message are not ours: shown literally, controls made visible.
    if result.ok:
        console.print(safe_text(f"model {result.model_id}: ok{suffix} (check {result.check_id})"))
    else:
        console.print(
            safe_text(
                f"model {result.model_id}: failed [{result.error_type}] {result.message or ''}{suffix} "
                f"(check {result.check_id})"
            )
        )


def render_registered_models(console: Console, registered: Sequence[ModelRecord]) -> None:
    if not registered:
        console.print(
            "registered models: none (replay:demo is built in) — register one with "
            "`specialists models add provider:name --actor ID`"
        )
        return
    console.print(
        table(
            "registered models (replay:demo is built in)",
            ["id", "base url", "key variable", "timeout s", "ceiling", "added by", "added at", "state"],
            [
                [
                    r.id,
                    r.base_url or _recordings_text(r),
                    r.api_key_env or "-",
                    str(r.timeout_s),
                    str(r.ceiling),
                    r.added_by,
                    _time(r.added_at) or "",
                    state_text(r.active, r.deactivated_by, r.deactivated_at),
                ]
                for r in registered
            ],
        )
    )


def render_ceilings(console: Console, ceilings: Sequence[dict[str, Any]]) -> None:
    """The live ceilings: allowance of ceiling, leases held and waiting, rate-limit answers."""
    if not ceilings:
        return
    console.print(
        table(
            "ceilings now (the allowance grows to the ceiling; a rate limit halves it)",
            ["model", "state", "allowance / ceiling", "held", "waiting", "rate limited", "note"],
            [
                [
                    c["model"],
                    c["live"],
                    f"{c['allowance']} / {c['ceiling']}"
                    if c["live"] == "running"
                    else f"- / {c['ceiling'] or '-'}",
                    str(c.get("held", "-")),
                    str(c.get("waiting", "-")),
                    str(c.get("rate_limited_total", "-")),
                    c["error"] or "",
                ]
                for c in ceilings
            ],
        )
    )


def _recordings_text(record: ModelRecord) -> str:
    if record.recordings is None:
        return "-"
    return f"{record.recordings} recordings, sha256 {(record.recordings_sha256 or '')[:12]}"


def state_text(active: bool, deactivated_by: str | None, deactivated_at: Any) -> str:
    """``active``, or who deactivated the record when."""
    return "active" if active else f"deactivated by {deactivated_by} at {_time(deactivated_at)}"


def repository_json(record: RepositoryRecord) -> dict[str, Any]:
    return {
        "alias": record.alias,
        "path": record.path,
        "default_branch": record.default_branch,
        "added_by": record.added_by,
        "added_at": _time(record.added_at),
        "active": record.active,
        "deactivated_by": record.deactivated_by,
        "deactivated_at": _time(record.deactivated_at),
    }


def actor_json(record: ActorRecord) -> dict[str, Any]:
    """An actor: who registered it, whether it is active, its key in force and every key it held."""
    return {
        "id": record.id,
        "name": record.name,
        "registered_by": record.registered_by,
        "registered_at": _time(record.registered_at),
        "active": record.active,
        "deactivated_by": record.deactivated_by,
        "deactivated_at": _time(record.deactivated_at),
        "key_fingerprint": record.key_fingerprint,
        "keys": [
            {
                "fingerprint": key.fingerprint,
                "added_at": _time(key.added_at),
                "added_by": key.added_by,
                "retired_at": _time(key.retired_at),
            }
            for key in record.keys
        ],
    }


def actors_json(records: list[ActorRecord]) -> dict[str, Any]:
    """``actors --json``: ``{"actors": [...], "trust_root"}`` (the fingerprint of the first actor's
    first key, to pin as ``SPECIALISTS_TRUST_ROOT``; ``null`` with no actor)."""
    root = next((r for r in records if r.registered_by is None and r.keys), None)
    return {
        "actors": [actor_json(r) for r in records],
        "trust_root": None if root is None else root.keys[0].fingerprint,
    }


def render_actors(console: Console, records: list[ActorRecord]) -> None:
    if not records:
        console.print("no actors — register the first with `specialists actors register ID --name NAME`")
        return
    console.print(
        table(
            "actors",
            ["id", "name", "registered by", "registered at", "key", "state"],
            [
                [
                    r.id,
                    r.name,
                    r.registered_by or "-",
                    _time(r.registered_at) or "",
                    (r.key_fingerprint or "-")[:16],
                    state_text(r.active, r.deactivated_by, r.deactivated_at),
                ]
                for r in records
            ],
        )
    )


def attestation_json(
    records: Sequence[UnverifiedRecord], keyless: Sequence[str], *, attested: bool, bootstrap: bool
) -> dict[str, Any]:
    """``configuration attest --json``: the records that carry no valid signature (signed, with
    ``attested`` true), the actors issued a key, whether the attesting actor became the trust root."""
    return {
        "attested": attested,
        "records": [record.model_dump(mode="json") for record in records],
        "keys_issued_to": list(keyless),
        "bootstrap": bootstrap,
    }


def render_attestation(console: Console, data: dict[str, Any]) -> None:
    records = data["records"]
    if not records and not data["keys_issued_to"]:
        console.print("every configuration record carries a valid signature: nothing to attest")
        return
    title = "attested records" if data["attested"] else "records without a valid signature (not used)"
    console.print(
        table(
            title,
            ["kind", "id", "why", "content"],
            [[r["kind"], r["id"], r["reason"], r["summary"]] for r in records],
        )
    )
    if data["keys_issued_to"]:
        verb = "were issued" if data["attested"] else "will be issued"
        console.print(f"actors without a key {verb} one: {', '.join(data['keys_issued_to'])}")
    if not data["attested"]:
        console.print("nothing was signed: review the records above, then run again with --yes")
    for path in data.get("key_files", []):
        console.print(safe_text(f"key written to {path} (mode 0600): give it to its actor alone"))


def configuration_events_json(events: Sequence[ConfigurationEvent]) -> dict[str, Any]:
    """``configuration events --json``: ``{"events": [{"id", "at", "kind", "actor", "record_kind",
    "record_id", "message"}]}``, newest first."""
    return {"events": [{**event.model_dump(mode="json"), "at": _time(event.at)} for event in events]}


def render_configuration_events(console: Console, data: dict[str, Any]) -> None:
    events = data["events"]
    if not events:
        console.print("no configuration events")
        return
    console.print(
        table(
            "configuration events (newest first)",
            ["at", "kind", "actor", "record", "message"],
            [
                [
                    e["at"],
                    e["kind"],
                    e["actor"] or "-",
                    f"{e['record_kind'] or '-'} {e['record_id'] or ''}".strip(),
                    e["message"],
                ]
                for e in events
            ],
        )
    )


def status_json(
    catalog: LoadedCatalog,
    policy: PolicyRecord,
    selection: ModelSelectionRecord | None,
    repositories: list[RepositoryRecord],
    actors: list[ActorRecord],
) -> dict[str, Any]:
    """``status --json``: catalog version and hash, policy, model selection, counts."""
    return {
        "catalog": {
            "catalog_version": catalog.version,
            "catalog_sha256": catalog.sha256,
            "profiles": len(catalog.profiles),
        },
        "policy": policy_json(policy),
        "models": {"selected": selection is not None, "current": selection_json(selection)},
        "repositories": len(repositories),
        "actors": len(actors),
    }


def render_status(console: Console, data: dict[str, Any]) -> None:
    """``status``'s configuration table; a part it could not read (``null`` in ``--json``) is shown
    as unknown, and why follows the table."""
    catalog = data["catalog"]
    console.print(
        table(
            "specialists status",
            ["", ""],
            [
                ["catalog", f"{catalog['catalog_version']} ({catalog['profiles']} profiles)"],
                ["catalog sha256", catalog["catalog_sha256"]],
                ["policy", _policy_text(data["policy"])],
                ["models", _models_text(data["models"])],
                ["repositories", _count_text(data["repositories"])],
                ["actors", _count_text(data["actors"])],
            ],
        )
    )


_UNKNOWN = "unknown (see below)"


def _policy_text(policy: dict[str, Any] | None) -> str:
    if policy is None:
        return _UNKNOWN
    return f"mode {policy['mode']}, ceiling {policy['maximum_automatic_tier']}"


def _models_text(models: dict[str, Any] | None) -> str:
    if models is None:
        return _UNKNOWN
    current = models["current"]
    if current is None:
        return "none selected (use `specialists models select --primary provider:name --actor ID`)"
    return (
        f"{current['primary']} (fallbacks: {', '.join(current['fallbacks']) or 'none'}, "
        f"mode {current['fallback_mode']}, support: {current['support'] or 'none'}, "
        f"advisory: {current.get('advisory') or 'none'})"
    )


def _count_text(count: int | None) -> str:
    return _UNKNOWN if count is None else str(count)
