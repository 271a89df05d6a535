"""The store handle: one engine, short transactions, operator configuration reads and writes.

Every write validates first and runs in a single transaction holding the write lock, so a refusal
changes nothing and two writers never interleave a check and a write.
"""

from __future__ import annotations

import datetime as dt
import hmac
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Final

from sqlalchemy import Engine
from sqlalchemy.engine import URL
from sqlalchemy.orm import Session

from contracts.config import ActorRecord, PolicyRecord, RepositoryConfig, RepositoryRecord
from contracts.enums import Tier
from contracts.errors import InvalidInput, NotFound, OperatorError, Refused
from contracts.models import ModelRecord, ModelRegistration, ModelSelection, ModelSelectionRecord
from contracts.policy import AutomationPolicy
from contracts.research import CaseInput, EvidenceInput, EvidenceRecord, JobOutputRecord, ResearchCase
from contracts.runs import AuditEvent, RunSummary
from contracts.worktree import WorktreeClaim
from store import (
    actors,
    model_registry,
    model_selection,
    repositories,
    research,
    runs,
    spent_proofs,
    worktree_claims,
)
from store import policy as automation_policy
from store.engine import database_errors, render_url, writing
from store.schema import DeploymentSettingRow

DEFAULT_HISTORY_LIMIT: Final = 20
TOKEN_FINGERPRINT_KEY: Final = "action_token_fingerprint"


def utc_now() -> dt.datetime:
    """The current time, timezone-aware UTC."""
    return dt.datetime.now(dt.UTC)


class Store:
    """Operator configuration: automation policy, model registry and selection, repositories, actors.

    Obtain one with :func:`store.database.open_store`; close it (or use it as a context manager)
    to release its connections. ``url`` is the database URL as the operator gave it (for messages;
    default the engine's); ``clock`` supplies write times (UTC).
    """

    def __init__(
        self, engine: Engine, *, url: URL | None = None, clock: Callable[[], dt.datetime] = utc_now
    ) -> None:
        self._engine = engine
        self._url = engine.url if url is None else url
        self._write_engine = writing(engine)
        self._clock = clock

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine behind the store."""
        return self._engine

    @property
    def url(self) -> str:
        """The database URL, password hidden."""
        return render_url(self._url)

    def close(self) -> None:
        """Release every pooled connection."""
        self._engine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # Automation policy

    def get_policy(self) -> PolicyRecord:
        """The policy in force; the built-in default (``set_by``/``set_at`` ``None``) if never set."""
        with self._reading() as session:
            return automation_policy.current_policy(session)

    def policy_history(self, limit: int = DEFAULT_HISTORY_LIMIT) -> list[PolicyRecord]:
        """Up to ``limit`` policy writes, newest first."""
        _check_limit(limit)
        with self._reading() as session:
            return automation_policy.policy_history(session, limit)

    def set_policy(self, policy: AutomationPolicy, actor: str) -> PolicyRecord:
        """Set the automation policy as ``actor`` and return the policy now in force.

        The write is read back in a new session and must equal what was written. Raises
        ``unknown_actor`` (not found), or :class:`OperatorError` ``policy_write_unverified`` when the
        policy read back differs (another write landed in between, or the write was lost).
        """
        with self._writing() as session:
            written = automation_policy.record_policy(session, policy, actor, self._now())
        in_force = self.get_policy()
        if in_force != written:
            raise OperatorError(
                "policy_write_unverified",
                f"the policy read back ({_describe_policy(in_force)}) is not the policy just "
                f"written ({_describe_policy(written)}): check `policy` and set it again",
            )
        return in_force

    # Model selection

    def get_model_selection(self) -> ModelSelectionRecord | None:
        """The model selection in force, or ``None`` when no model was ever selected."""
        with self._reading() as session:
            return model_selection.current_selection(session)

    def select_models(self, selection: ModelSelection, actor: str) -> ModelSelectionRecord:
        """Record ``selection`` as made by ``actor``. Raises ``unknown_actor`` (not found).

        This low-level write does not look models up in the registry (tests and the demo select
        test providers with it). Operator surfaces use :meth:`select_registered_models`.
        """
        with self._writing() as session:
            return model_selection.record_selection(session, selection, actor, self._now())

    def select_registered_models(self, selection: ModelSelection, actor: str) -> ModelSelectionRecord:
        """Record ``selection`` as made by ``actor`` if every model in it is available: a built-in
        ``replay:*`` id or a registered model. Raises ``unknown_model`` (not found, naming the id) or
        ``unknown_actor`` (not found); nothing is written then."""
        with self._writing() as session:
            model_registry.require_selectable(session, selection)
            return model_selection.record_selection(session, selection, actor, self._now())

    def model_selection_history(self, limit: int = DEFAULT_HISTORY_LIMIT) -> list[ModelSelectionRecord]:
        """Up to ``limit`` model selections, newest first."""
        _check_limit(limit)
        with self._reading() as session:
            return model_selection.selection_history(session, limit)

    # Model registry

    def register_model(self, registration: ModelRegistration, actor: str) -> ModelRecord:
        """Register a model as ``actor``; see :func:`store.model_registry.register_model` for the rules.

        Raises ``replay_is_built_in``, ``unknown_provider``, ``invalid_base_url``,
        ``invalid_api_key_env`` (invalid input), ``unknown_actor`` (not found) or ``duplicate_model``
        (refused); nothing is written then.
        """
        model_registry.check_registration(registration)
        with self._writing() as session:
            return model_registry.register_model(session, registration, actor, self._now())

    def list_models(self) -> list[ModelRecord]:
        """All registered models, by id (built-in replay models are not listed)."""
        with self._reading() as session:
            return model_registry.list_models(session)

    def get_model(self, model_id: str) -> ModelRecord:
        """The registered model ``model_id``. Raises ``unknown_model`` (not found)."""
        with self._reading() as session:
            return model_registry.get_model(session, model_id)

    def model_available(self, model_id: str) -> bool:
        """Whether runs may use ``model_id``: always for ``replay:*``, else when it is registered."""
        with self._reading() as session:
            return model_registry.model_available(session, model_id)

    # Repositories

    def add_repository(
        self,
        alias: str,
        root: Path,
        default_branch: str,
        actor: str,
        config: RepositoryConfig | None = None,
    ) -> RepositoryRecord:
        """Allow-list the git working tree at ``root`` as ``alias``, with ``default_branch`` and
        ``config`` (the default configuration when ``None``).

        The store does no git (docs/architecture.md "Storage"): ``root`` and ``default_branch`` are
        what the caller checked, as :func:`runtime.git_repository.checked_working_tree` returns them
        (the resolved top level of a working tree and an existing local branch; its errors are
        ``not_a_git_repository`` and ``unknown_branch``). Raises ``invalid_alias`` (invalid input),
        ``not_a_git_repository`` for a ``root`` that is not absolute, ``unknown_branch`` for an empty
        branch, ``unknown_actor`` (not found) or ``duplicate_alias`` (refused); nothing is written then.
        """
        repositories.check_alias(alias)
        if not root.is_absolute():
            raise InvalidInput(
                "not_a_git_repository", f"{root} is not an absolute path: check the working tree first"
            )
        if not default_branch:
            raise InvalidInput("unknown_branch", "no default branch was given: check the working tree first")
        with self._writing() as session:
            return repositories.add_repository(
                session, alias, str(root), default_branch, actor, self._now(), config=config
            )

    def update_repository_config(self, alias: str, config: RepositoryConfig, actor: str) -> RepositoryRecord:
        """Replace the configuration of the repository ``alias`` with ``config``, as ``actor``.

        Nothing else about the repository changes, and contracts already captured keep the
        configuration they froze: only runs captured afterwards see the new one. Raises
        ``unknown_actor`` or ``unknown_repository`` (not found); nothing is written then.
        """
        with self._writing() as session:
            return repositories.update_repository_config(session, alias, config, actor)

    def get_repository(self, alias: str) -> RepositoryRecord:
        """The repository registered as ``alias``. Raises ``unknown_repository`` (not found)."""
        with self._reading() as session:
            return repositories.get_repository(session, alias)

    def capture_reads(
        self, alias: str | None
    ) -> tuple[PolicyRecord, ModelSelectionRecord | None, RepositoryRecord | None]:
        """What contract capture reads, in one transaction: the policy in force, the model selection
        in force (``None`` when none was ever made) and the repository registered as ``alias``
        (``None`` for no alias or one not registered)."""
        with self._reading() as session:
            policy = automation_policy.current_policy(session)
            selection = model_selection.current_selection(session)
            repository = None if alias is None else repositories.find_repository(session, alias)
            return policy, selection, repository

    def repository_exists(self, alias: str) -> bool:
        """Whether ``alias`` names an allow-listed repository."""
        try:
            self.get_repository(alias)
        except NotFound:
            return False
        return True

    def list_repositories(self) -> list[RepositoryRecord]:
        """All registered repositories, by alias."""
        with self._reading() as session:
            return repositories.list_repositories(session)

    # Actors

    def register_actor(self, actor_id: str, name: str, by: str | None) -> ActorRecord:
        """Register a human actor; see :func:`store.actors.register_actor` for the rules."""
        actors.check_actor_id(actor_id)
        actors.check_actor_name(name)
        with self._writing() as session:
            return actors.register_actor(session, actor_id, name, by, self._now())

    def list_actors(self) -> list[ActorRecord]:
        """All registered actors, in order of registration."""
        with self._reading() as session:
            return actors.list_actors(session)

    def actor_exists(self, actor_id: str) -> bool:
        """Whether ``actor_id`` is registered."""
        with self._reading() as session:
            return actors.actor_exists(session, actor_id)

    # Transactions

    # Action token

    def adopt_token_fingerprint(self, fingerprint: str) -> bool:
        """Check ``fingerprint`` against the adopted action token's; adopt it when there is none.

        Returns ``True`` when the fingerprint was adopted now. Raises :class:`Refused`
        (``action_token_mismatch``) when a different token was adopted before.
        """
        with self._writing() as session:
            row = session.get(DeploymentSettingRow, TOKEN_FINGERPRINT_KEY)
            if row is None:
                session.add(
                    DeploymentSettingRow(key=TOKEN_FINGERPRINT_KEY, value=fingerprint, set_at=self._now())
                )
                return True
            if not hmac.compare_digest(row.value, fingerprint):
                raise Refused(
                    "action_token_mismatch",
                    "the action token is not the one this deployment adopted: use the deployment's "
                    "token (SPECIALISTS_ACTION_TOKEN or SPECIALISTS_ACTION_TOKEN_FILE)",
                )
            return False

    def spend_proof_nonce(
        self,
        nonce: str,
        *,
        action: str,
        run_id: str,
        actor: str,
        spent_by: str,
        at: dt.datetime | None = None,
    ) -> bool:
        """Spend the nonce of a verified proof of the action token; ``False`` when it was spent already.

        ``spent_by`` is the Temporal workflow run id of the execution the proof authorises. Returns
        ``True`` when the nonce is new, or was spent by the same ``spent_by`` (a retried activity
        whose first attempt committed); ``False`` when another execution spent it (a replayed proof).
        Safe under concurrency: of two spends racing for a nonce exactly one execution owns it.
        ``at`` (timezone-aware, default now) is recorded as the spend time. Each new spend prunes
        nonces spent more than :data:`store.spent_proofs.SPENT_PROOF_RETENTION` (one day) before
        ``at``: their proofs expired long ago (see :meth:`prune_spent_proofs`).
        """
        spent_at = self._now() if at is None else _utc(at)
        with self._writing() as session:
            return spent_proofs.spend(
                session,
                nonce,
                action=action,
                run_id=run_id,
                actor=actor,
                spent_by=spent_by,
                at=spent_at,
            )

    def prune_spent_proofs(self, *, before: dt.datetime | None = None) -> int:
        """Delete nonces spent before ``before`` (default: one day ago); the number deleted.

        :meth:`spend_proof_nonce` already prunes on every new spend; this is for maintenance.
        """
        cutoff = self._now() - spent_proofs.SPENT_PROOF_RETENTION if before is None else _utc(before)
        with self._writing() as session:
            return spent_proofs.prune(session, before=cutoff)

    # Worktree claims

    def claim_worktree_attempt(
        self, run_id: str, execution_attempt: int, worker: str, worktree_attempt: int
    ) -> WorktreeClaim:
        """Claim ``execution_attempt`` (>= 1) of ``run_id`` for ``worker``, which runs it in the attempt
        directory numbered ``worktree_attempt`` (>= 1); the claim returned is stamped now (UTC).

        At most one claim per (``run_id``, ``execution_attempt``) ever exists: the database's primary
        key decides, so of two workers claiming at once (threads or processes) exactly one wins.
        Raises :class:`InvalidInput` ``invalid_run_id`` (not ``^[A-Za-z0-9_-]{1,64}$``),
        ``invalid_execution_attempt``, ``invalid_worktree_attempt`` (not an integer >= 1) or
        ``invalid_worker`` (blank or over 200 characters), or :class:`Refused` ``attempt_claimed``
        (naming the run, the execution attempt and the worker holding it); nothing is written then.
        """
        worktree_claims.check_claim(run_id, execution_attempt, worker, worktree_attempt)
        with self._writing() as session:
            return worktree_claims.claim_worktree_attempt(
                session, run_id, execution_attempt, worker, worktree_attempt, self._now()
            )

    def worktree_claims(self, run_id: str) -> list[WorktreeClaim]:
        """The claims of ``run_id``, by execution attempt (empty when none).

        Raises :class:`InvalidInput` ``invalid_run_id`` (not ``^[A-Za-z0-9_-]{1,64}$``).
        """
        worktree_claims.check_run_id(run_id)
        with self._reading() as session:
            return worktree_claims.list_worktree_claims(session, run_id)

    # Research cases and evidence

    def create_case(self, case: CaseInput, actor: str) -> ResearchCase:
        """Create a research case from ``case`` as ``actor``; returns the stored case.

        Every record of ``case.evidence`` must carry its content (the CLI reads a ``path`` first); the
        records are stored in the given order, active, each with the sha256 of its content (computed
        here) and a new ``EVD-`` id; the case gets a new ``RSC-`` id. Raises :class:`InvalidInput`
        ``evidence_path_unresolved`` (an input still has a path) or ``invalid_evidence`` (blank or
        oversize content, content with NUL, or not 1..100 records), or :class:`NotFound`
        ``unknown_actor``; nothing is written then.
        """
        research.check_resolved_evidence(case.evidence)
        with self._writing() as session:
            return research.create_case(session, case, actor, self._now())

    def get_case(self, case_id: str) -> ResearchCase:
        """The case ``case_id`` with every evidence record (active or not) in the order of addition.

        Raises :class:`InvalidInput` ``invalid_case_id`` (not ``RSC-`` + 12 of ``[0-9A-Z]``) or
        :class:`NotFound` ``unknown_case``.
        """
        research.check_case_id(case_id)
        with self._reading() as session:
            return research.get_case(session, case_id)

    def list_cases(self) -> list[ResearchCase]:
        """Every research case with its evidence records, newest first (empty when there are none)."""
        with self._reading() as session:
            return research.list_cases(session)

    def add_evidence(self, case_id: str, evidence: list[EvidenceInput], actor: str) -> list[EvidenceRecord]:
        """Add ``evidence`` (1..100 records with their content) to the case ``case_id`` as ``actor``;
        returns the new records, active, in the given order after the case's existing ones.

        All are added or none. Raises :class:`InvalidInput` ``invalid_case_id``,
        ``evidence_path_unresolved`` or ``invalid_evidence``, or :class:`NotFound` ``unknown_actor`` or
        ``unknown_case``; nothing is written then.
        """
        research.check_case_id(case_id)
        research.check_resolved_evidence(evidence)
        with self._writing() as session:
            return research.add_evidence(session, case_id, evidence, actor, self._now())

    def deactivate_evidence(self, case_id: str, evidence_id: str, actor: str) -> EvidenceRecord:
        """Deactivate the evidence record ``evidence_id`` of the case ``case_id`` as ``actor``; returns
        the record, now inactive with who deactivated it and when (its content never changes).

        Raises :class:`InvalidInput` ``invalid_case_id`` or ``invalid_evidence_id``, :class:`NotFound`
        ``unknown_actor``, ``unknown_case`` or ``unknown_evidence`` (also when the record belongs to
        another case), or :class:`Refused` ``evidence_inactive`` (deactivated already); nothing is
        written then.
        """
        research.check_case_id(case_id)
        research.check_evidence_id(evidence_id)
        with self._writing() as session:
            return research.deactivate_evidence(session, case_id, evidence_id, actor, self._now())

    # Research job outputs

    def save_job_output(self, record: JobOutputRecord) -> JobOutputRecord:
        """Store the output of one research model job, once per ``record.job_id``; returns the stored
        record (``created_at`` is the time it was first stored; a given one is ignored).

        ``output_sha256`` (and ``pack_sha256`` with a ``pack``) must be the RFC 8785 canonical-JSON
        sha256 of ``output`` (``pack``). Idempotent: when the job id is stored already with the same
        output digest, team, kind, profile, model and pack digest (a retried write), the stored record
        is returned. The primary key decides, so of concurrent writers exactly one inserts. Raises
        :class:`InvalidInput` ``invalid_job_output`` or ``job_output_digest_mismatch``, or
        :class:`Refused` ``job_output_conflict`` (the job id holds a different output); nothing is
        written then.
        """
        research.check_job_output(record)
        with self._writing() as session:
            return research.save_job_output(session, record, self._now())

    def get_job_output(self, job_id: str) -> JobOutputRecord:
        """The stored output of ``job_id``. Raises :class:`NotFound` ``unknown_job_output``."""
        with self._reading() as session:
            return research.get_job_output(session, job_id)

    def team_job_outputs(self, team_id: str) -> list[JobOutputRecord]:
        """The stored job outputs of ``team_id`` in the order they were stored (empty when none)."""
        with self._reading() as session:
            return research.team_job_outputs(session, team_id)

    # Run projection

    def project_run(self, summary: RunSummary, events: list[AuditEvent]) -> None:
        """Upsert a run's summary and append its new audit events (idempotent)."""
        with self._writing() as session:
            runs.project_run(session, summary, events)

    def list_runs(
        self, *, status: str | None = None, tier: Tier | None = None, limit: int = 100
    ) -> list[RunSummary]:
        """Projected runs, newest first, filtered by status and tier."""
        _check_limit(limit)
        with self._reading() as session:
            return runs.list_runs(session, status=status, tier=tier, limit=limit)

    def run_events(self, run_id: str) -> list[AuditEvent]:
        """The projected audit events of a run, in order."""
        with self._reading() as session:
            return runs.run_events(session, run_id)

    @contextmanager
    def _reading(self) -> Iterator[Session]:
        with database_errors(self._url), Session(self._engine) as session, session.begin():
            yield session

    @contextmanager
    def _writing(self) -> Iterator[Session]:
        with (
            database_errors(self._url),
            Session(self._write_engine) as session,
            session.begin(),
        ):
            yield session

    def _now(self) -> dt.datetime:
        now = self._clock()
        if now.tzinfo is None or now.utcoffset() is None:
            raise ValueError("the store clock must return timezone-aware times")
        return now.astimezone(dt.UTC)


def _utc(value: dt.datetime) -> dt.datetime:
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"expected a timezone-aware time, got {value!r}")
    return value.astimezone(dt.UTC)


def _check_limit(limit: int) -> None:
    if limit < 1:
        raise InvalidInput("invalid_limit", f"limit must be at least 1, not {limit}")


def _describe_policy(record: PolicyRecord) -> str:
    return (
        f"mode {record.policy.mode.value}, ceiling {record.policy.maximum_automatic_tier.value}, "
        f"set by {record.set_by or 'default'}"
    )
