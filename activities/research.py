"""Research team activities: capture a team's inputs, re-check them before each stage, store job outputs.

``capture_team`` reads the case, the catalog and the model selection once, so all three enter the
team's history through its result; ``check_team_inputs`` reads the evidence digest and the catalog
sha256 again before every stage (a change invalidates the team); ``store_job_output`` keeps a
research job's validated output and pack in the store, so results travel by reference. Model output
is stored apart from evidence and never becomes evidence.
"""

from __future__ import annotations

from temporalio import activity

from activities.config import ActivityConfig
from activities.errors import refusal
from activities.store_access import SharedStore
from catalog.loader import load_catalog
from contracts.enums import FallbackMode
from contracts.errors import OperatorError, Refused
from contracts.hashing import canonical_sha256
from contracts.output import SpecialistOutput
from contracts.research import JobOutputRecord
from contracts.research_teams import (
    STAGES,
    EvidenceRef,
    StageAssignment,
    StoredJobOutput,
    StoreJobOutputRequest,
    TeamCapture,
    TeamCaptureRequest,
    TeamInputsCheck,
    TeamInputsCheckRequest,
    check_team_evidence,
)
from contracts.runs import ModelSnapshot
from contracts.temporal_names import ActivityName
from runtime.logs import run_logger


class ResearchActivities:
    """The research team's activities, bound to the deployment's catalog, store and deadline."""

    def __init__(self, config: ActivityConfig, store: SharedStore) -> None:
        self._config = config
        self._store = store

    @activity.defn(name=ActivityName.CAPTURE_TEAM)
    def capture_team(self, request: TeamCaptureRequest) -> TeamCapture:
        """Freeze a team's inputs: the case's active evidence by reference and its digest, the catalog
        sha256, the model snapshot, each stage's profile and catalog reviewer, the deadline.

        Raises non-retryable ``ApplicationError`` typed by the refusal code: ``unknown_case``,
        ``team_evidence_empty``, ``team_evidence_limit`` (over 25), ``team_evidence_too_large``,
        ``no_model_selected``, ``catalog_changed`` (a stage's profile is not in the catalog). A store
        outage is retryable.
        """
        log = run_logger(request.team_id, activity="capture_team")
        try:
            catalog = load_catalog(self._config.catalog_path)
            store = self._store.get()
            case = store.get_case(request.case_id)
            active = check_team_evidence(case)
            selection = store.get_model_selection()
            if selection is None:
                raise Refused(
                    "no_model_selected",
                    "a research team calls models: select one first (specialists models select)",
                )
            # Every stage runs on the primary chain (below): each of its models must be usable.
            chosen_chain: list[str | None] = [selection.selection.primary]
            if selection.selection.fallback_mode is FallbackMode.ORDERED:
                chosen_chain += list(selection.selection.fallbacks)
            store.require_usable_models(chosen_chain)
            stages = []
            for spec in STAGES:
                profile = catalog.profiles.get(spec.profile_id)
                if profile is None:
                    raise Refused(
                        "catalog_changed",
                        f"stage {spec.number} profile {spec.profile_id!r} is not in the catalog",
                    )
                stages.append(StageAssignment(spec=spec, reviewer_id=profile.reviewer))
        except OperatorError as error:
            log.warning("team_capture_refused", code=error.code, message=error.message)
            raise refusal(error) from error
        # A research team is security work: every stage runs on the primary chain, never the support
        # model (docs/architecture.md "Run lifecycle", model selection).
        model = ModelSnapshot.from_selection(selection)
        refs = [EvidenceRef(evidence_id=r.evidence_id, kind=r.kind, sha256=r.sha256) for r in active]
        digest = case.evidence_digest
        log.info("team_captured", case_id=case.case_id, evidence=len(refs), evidence_digest=digest)
        return TeamCapture(
            case_id=case.case_id,
            subject_title=case.subject.title,
            subject_kind=case.subject.kind,
            subject_identifier=case.subject.identifier,
            evidence=refs,
            evidence_digest=digest,
            catalog_sha256=catalog.sha256,
            model=model,
            stages=stages,
            deadline_seconds=self._config.team_deadline_seconds,
        )

    @activity.defn(name=ActivityName.CHECK_TEAM_INPUTS)
    def check_team_inputs(self, request: TeamInputsCheckRequest) -> TeamInputsCheck:
        """The case's evidence digest (active records) and the worker's catalog sha256, read now.

        Raises non-retryable ``unknown_case`` when the case is gone; a store outage is retryable.
        """
        try:
            catalog = load_catalog(self._config.catalog_path)
            case = self._store.get().get_case(request.case_id)
        except OperatorError as error:
            raise refusal(error) from error
        return TeamInputsCheck(evidence_digest=case.evidence_digest, catalog_sha256=catalog.sha256)

    @activity.defn(name=ActivityName.STORE_JOB_OUTPUT)
    def store_job_output(self, request: StoreJobOutputRequest) -> StoredJobOutput:
        """Store a research job's output (validated again: model output is untrusted) and its pack;
        return the output's canonical sha256. Idempotent: a retry with the same output finds it.

        Raises non-retryable ``job_output_conflict`` when the job id holds another output, and
        ``model_output_schema`` when the output does not validate; a store outage is retryable.
        """
        try:
            output = SpecialistOutput.model_validate(request.output)
        except ValueError as error:
            raise refusal(
                Refused("model_output_schema", f"stored output does not validate: {error}")
            ) from None
        data = output.model_dump(mode="json")
        sha = canonical_sha256(data)
        try:
            stored = self._store.get().save_job_output(
                JobOutputRecord(
                    job_id=request.job_id,
                    team_id=request.team_id,
                    kind=request.kind.value,
                    profile_id=request.profile_id,
                    model_id=request.model_id,
                    output=data,
                    output_sha256=sha,
                    pack=request.pack,
                    pack_sha256=request.pack_sha256,
                )
            )
        except OperatorError as error:
            raise refusal(error) from error
        run_logger(request.team_id, activity="store_job_output").info(
            "job_output_stored", job_id=request.job_id, output_sha256=stored.output_sha256
        )
        return StoredJobOutput(job_id=stored.job_id, sha256=stored.output_sha256)
