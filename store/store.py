"""The store handle: one engine, short transactions, operator configuration reads and writes.

Every write validates first and runs in a single transaction holding the write lock, so a refusal
changes nothing and two writers never interleave a check and a write.
"""

from __future__ import annotations

import contextlib
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
from sqlalchemy.orm.exc import StaleDataError

from contracts.config import (
    ActorRecord,
    ConfigurationEvent,
    PolicyRecord,
    RepositoryConfig,
    RepositoryRecord,
    UnverifiedRecord,
)
from contracts.enums import Tier
from contracts.errors import InvalidInput, NotFound, OperatorError, Refused
from contracts.identity import ActorKey, RecordKind, Signer, TrustAnchor
from contracts.models import ModelRecord, ModelRegistration, ModelSelection, ModelSelectionRecord
from contracts.policy import AutomationPolicy
from contracts.proofs import SessionDelegation, token_fingerprint
from contracts.queue_items import QueueItem
from contracts.recordings import RecordingsFile
from contracts.refusals import RefusalCode
from contracts.research import (
    CaseInput,
    CaseStatus,
    EvidenceInput,
    EvidenceRecord,
    JobOutputRecord,
    ResearchCase,
)
from contracts.runs import AuditEvent, RunSummary
from contracts.worktree import WorktreeClaim
from store import (
    actors,
    attestation,
    configuration_events,
    model_registry,
    model_selection,
    queue_archive,
    repositories,
    research,
    runs,
    session_keys,
    spent_proofs,
    worktree_claims,
)
from store import policy as automation_policy
from store.engine import database_errors, render_url, writing
from store.schema import DeploymentSettingRow
from store.trust import ConfigurationUnverified, Trust

DEFAULT_HISTORY_LIMIT: Final = 20
TOKEN_FINGERPRINT_KEY: Final = "action_token_fingerprint"


def utc_now() -> dt.datetime:
    """The current time, timezone-aware UTC."""
    return dt.datetime.now(dt.UTC)


class Store:
    """Operator configuration: automation policy, model registry and selection, repositories, actors.

    Obtain one with :func:`store.database.open_store`; close it (or use it as a context manager)
    to release its connections. ``url`` is the database URL as the operator gave it (for messages;
    default the engine's); ``clock`` supplies write times (UTC). ``anchor`` is what anchors the
    chain of configuration trust (docs/architecture.md "Configuration"): every configuration read
    verifies the records it returns against it and refuses one that is not verified
    (``configuration_unverified``, recorded in the configuration audit log); without an anchor no
    signed record can be read (``trust_root_not_configured``).
    """

    def __init__(
        self,
        engine: Engine,
        *,
        url: URL | None = None,
        clock: Callable[[], dt.datetime] = utc_now,
        anchor: TrustAnchor | None = None,
    ) -> None:
        self._engine = engine
        self._url = engine.url if url is None else url
        self._write_engine = writing(engine)
        self._clock = clock
        self._anchor = anchor or TrustAnchor()

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine behind the store."""
        return self._engine

    @property
    def url(self) -> str:
        """The database URL, password hidden."""
        return render_url(self._url)

    @property
    def anchor(self) -> TrustAnchor:
        """What this store verifies configuration records against."""
        return self._anchor

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
        """The policy in force; the built-in default (``set_by``/``set_at`` ``None``) if never set.
        Raises ``configuration_unverified`` when the newest write is not verified."""
        with self._configuration() as (session, trust):
            return automation_policy.current_policy(session, trust)

    def policy_history(self, limit: int = DEFAULT_HISTORY_LIMIT) -> list[PolicyRecord]:
        """Up to ``limit`` policy writes, newest first."""
        _check_limit(limit)
        with self._configuration() as (session, trust):
            return automation_policy.policy_history(session, trust, limit)

    def record_session(self, delegation: SessionDelegation) -> None:
        """Record a Mission Control session's delegation so configuration records its session key
        signs verify; see :func:`store.session_keys.record_session` for the refusals."""
        with self._configuration(write=True) as (session, trust):
            session_keys.record_session(session, trust, delegation, self._now())

    def set_policy(self, policy: AutomationPolicy, signer: Signer) -> PolicyRecord:
        """Set the automation policy as ``signer`` and return the policy now in force.

        The write is read back in a new session and must equal what was written. Raises the
        :meth:`store.trust.Trust.require_signer` refusals, or :class:`OperatorError`
        ``policy_write_unverified`` when the policy read back differs (another write landed in
        between, or the write was lost).
        """
        try:
            with self._configuration(write=True) as (session, trust):
                written = automation_policy.record_policy(session, trust, policy, signer, self._now())
                self._event(
                    session,
                    "policy_set",
                    signer,
                    RecordKind.POLICY,
                    None,
                    f"policy set: {_describe_policy(written)}",
                )
        except StaleDataError:  # the row was removed while it was being signed
            raise OperatorError(
                "policy_write_unverified",
                "the policy write was lost before it was signed: check `policy` and set it again",
            ) from None
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
        with self._configuration() as (session, trust):
            return model_selection.current_selection(session, trust)

    def select_models(self, selection: ModelSelection, signer: Signer) -> ModelSelectionRecord:
        """Record ``selection`` as made by ``signer``.

        This low-level write does not look models up in the registry (tests and the demo select
        test providers with it). Operator surfaces use :meth:`select_registered_models`.
        """
        with self._configuration(write=True) as (session, trust):
            record = model_selection.record_selection(session, trust, selection, signer, self._now())
            self._selected(session, signer, record)
            return record

    def select_registered_models(self, selection: ModelSelection, signer: Signer) -> ModelSelectionRecord:
        """Record ``selection`` as made by ``signer`` if every model in it is usable: a built-in
        replay model or a registered (replay models with recordings), verified, active model.
        Raises ``unknown_model`` (not found, naming the id), ``model_deactivated``,
        ``configuration_unverified`` or the signer refusals; nothing is written then."""
        with self._configuration(write=True) as (session, trust):
            model_registry.require_selectable(session, trust, selection)
            record = model_selection.record_selection(session, trust, selection, signer, self._now())
            self._selected(session, signer, record)
            return record

    def model_selection_history(self, limit: int = DEFAULT_HISTORY_LIMIT) -> list[ModelSelectionRecord]:
        """Up to ``limit`` model selections, newest first."""
        _check_limit(limit)
        with self._configuration() as (session, trust):
            return model_selection.selection_history(session, trust, limit)

    def require_usable_models(self, model_ids: list[str | None]) -> None:
        """Refuse a new run's use of any of ``model_ids`` (``None`` entries ignored) that is
        registered but deactivated (``model_deactivated``) or not verified
        (``configuration_unverified``). An id that is not registered is left to the model call,
        which refuses it as it always did (a selection is checked against the registry when it is
        made, :meth:`select_registered_models`)."""
        with self._configuration() as (session, trust):
            model_registry.require_usable(session, trust, model_ids, registered_only=False)

    def require_registered_models(self, model_ids: list[str | None]) -> None:
        """As :meth:`require_usable_models`, but a model that is neither built in nor registered is
        refused too (``unknown_model``): what the goal queue's escalation model is held to, as a
        selection's models are when they are selected."""
        with self._configuration() as (session, trust):
            model_registry.require_usable(session, trust, model_ids)

    # Model registry

    def register_model(self, registration: ModelRegistration, signer: Signer) -> ModelRecord:
        """Register a model as ``signer``; see :func:`store.model_registry.register_model` for the rules.

        Raises ``replay_is_built_in``, ``unknown_provider``, ``invalid_base_url``,
        ``invalid_api_key_env`` (invalid input), the signer refusals or ``duplicate_model``
        (refused); nothing is written then.
        """
        model_registry.check_registration(registration)
        with self._configuration(write=True) as (session, trust):
            record = model_registry.register_model(session, trust, registration, signer, self._now())
            self._event(
                session,
                "model_registered",
                signer,
                RecordKind.MODEL,
                record.id,
                f"model {record.id!r} registered (timeout {record.timeout_s} s, ceiling {record.ceiling})",
            )
            return record

    def register_replay_model(self, model_id: str, recordings: RecordingsFile, signer: Signer) -> ModelRecord:
        """Register the replay model ``model_id`` answering from ``recordings`` as ``signer``; see
        :func:`store.model_registry.register_replay_model` for the rules."""
        model_registry.check_replay_id(model_id)
        with self._configuration(write=True) as (session, trust):
            record = model_registry.register_replay_model(
                session, trust, model_id, recordings, signer, self._now()
            )
            self._event(
                session,
                "model_registered",
                signer,
                RecordKind.MODEL,
                record.id,
                f"replay model {record.id!r} registered with {len(recordings.recordings)} recordings",
            )
            return record

    def replay_recordings(self, model_id: str) -> str | None:
        """The verified recordings file of the registered replay model ``model_id``, or ``None``
        when none is registered. Raises ``configuration_unverified``."""
        with self._configuration() as (session, trust):
            return model_registry.replay_recordings(session, trust, model_id)

    def deactivate_model(self, model_id: str, signer: Signer) -> ModelRecord:
        """Deactivate the registered model ``model_id`` as ``signer`` (audited); see
        :func:`store.model_registry.deactivate_model`."""
        with self._configuration(write=True) as (session, trust):
            record = model_registry.deactivate_model(session, trust, model_id, signer, self._now())
            self._event(
                session,
                "model_deactivated",
                signer,
                RecordKind.MODEL,
                model_id,
                f"model {model_id!r} deactivated",
            )
            return record

    def list_models(self) -> list[ModelRecord]:
        """All registered models, replay models with recordings included, by id (the built-in
        replay models are not listed)."""
        with self._configuration() as (session, trust):
            return model_registry.list_models(session, trust)

    def get_model(self, model_id: str) -> ModelRecord:
        """The registered model ``model_id``. Raises ``unknown_model`` (not found) or
        ``configuration_unverified``."""
        with self._configuration() as (session, trust):
            return model_registry.get_model(session, trust, model_id)

    def model_available(self, model_id: str) -> bool:
        """Whether a new run may use ``model_id``: always for a built-in replay model, else when
        it is registered, verified and active."""
        with self._configuration() as (session, trust):
            return model_registry.model_available(session, trust, model_id)

    # Repositories

    def add_repository(
        self,
        alias: str,
        root: Path,
        default_branch: str,
        signer: Signer,
        config: RepositoryConfig | None = None,
    ) -> RepositoryRecord:
        """Allow-list the git working tree at ``root`` as ``alias``, with ``default_branch`` and
        ``config`` (the default configuration when ``None``), signed by ``signer``.

        The store does no git (docs/architecture.md "Storage"): ``root`` and ``default_branch`` are
        what the caller checked, as :func:`runtime.git_repository.checked_working_tree` returns them
        (the resolved top level of a working tree and an existing local branch; its errors are
        ``not_a_git_repository`` and ``unknown_branch``). Raises ``invalid_alias`` (invalid input),
        ``not_a_git_repository`` for a ``root`` that is not absolute, ``unknown_branch`` for an empty
        branch, the signer refusals or ``duplicate_alias`` (refused); nothing is written then.
        """
        repositories.check_alias(alias)
        if not root.is_absolute():
            raise InvalidInput(
                "not_a_git_repository", f"{root} is not an absolute path: check the working tree first"
            )
        if not default_branch:
            raise InvalidInput("unknown_branch", "no default branch was given: check the working tree first")
        with self._configuration(write=True) as (session, trust):
            record = repositories.add_repository(
                session, trust, alias, str(root), default_branch, signer, self._now(), config=config
            )
            self._event(
                session,
                "repository_added",
                signer,
                RecordKind.REPOSITORY,
                alias,
                f"repository {alias!r} added: {record.path}, branch {record.default_branch!r}",
            )
            return record

    def update_repository_config(
        self, alias: str, config: RepositoryConfig, signer: Signer
    ) -> RepositoryRecord:
        """Replace the configuration of the repository ``alias`` with ``config``, as ``signer``.

        Nothing else about the repository changes, and contracts already captured keep the
        configuration they froze: only runs captured afterwards see the new one. Raises the signer
        refusals, ``unknown_repository`` (not found), ``configuration_unverified`` or
        ``repository_deactivated``; nothing is written then.
        """
        with self._configuration(write=True) as (session, trust):
            record = repositories.update_repository_config(session, trust, alias, config, signer, self._now())
            self._event(
                session,
                "repository_config_updated",
                signer,
                RecordKind.REPOSITORY,
                alias,
                f"repository {alias!r}: configuration replaced ({record.config.executor.value} executor)",
            )
            return record

    def deactivate_repository(self, alias: str, signer: Signer) -> RepositoryRecord:
        """Deactivate the repository ``alias`` as ``signer`` (audited); see
        :func:`store.repositories.deactivate_repository`."""
        with self._configuration(write=True) as (session, trust):
            record = repositories.deactivate_repository(session, trust, alias, signer, self._now())
            self._event(
                session,
                "repository_deactivated",
                signer,
                RecordKind.REPOSITORY,
                alias,
                f"repository {alias!r} deactivated",
            )
            return record

    def get_repository(self, alias: str) -> RepositoryRecord:
        """The repository registered as ``alias`` (active or not). Raises ``unknown_repository`` (not
        found) or ``configuration_unverified``."""
        with self._configuration() as (session, trust):
            return repositories.get_repository(session, trust, alias)

    def capture_reads(
        self, alias: str | None
    ) -> tuple[PolicyRecord, ModelSelectionRecord | None, RepositoryRecord | None]:
        """What contract capture reads, in one transaction: the policy in force, the model selection
        in force (``None`` when none was ever made) and the repository registered as ``alias``
        (``None`` for no alias or one not registered). Every record is verified
        (``configuration_unverified`` otherwise)."""
        with self._configuration() as (session, trust):
            policy = automation_policy.current_policy(session, trust)
            selection = model_selection.current_selection(session, trust)
            repository = None if alias is None else repositories.find_repository(session, trust, alias)
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
        with self._configuration() as (session, trust):
            return repositories.list_repositories(session, trust)

    # Actors

    def bootstrap_actor(self, actor_id: str, name: str, key: ActorKey, token: bytes) -> ActorRecord:
        """Register the first actor, the trust root, holding ``key``; ``token`` (the deployment's
        action token) anchors its first key and is adopted (or must match the one adopted). Raises
        ``actor_required`` (an actor exists already), ``action_token_mismatch`` or
        ``configuration_unverified`` (this store's anchor does not accept the new root, e.g.
        ``SPECIALISTS_TRUST_ROOT`` names another key); nothing is written then."""
        actors.check_actor_id(actor_id)
        actors.check_actor_name(name)
        with self._configuration(write=True) as (session, _):
            self._adopt(session, token_fingerprint(token))
            actors.bootstrap_actor(session, actor_id, name, key, token, self._now())
            trust = self._trust(session)
            state = trust.actor(actor_id)
            assert state is not None
            if state.current_key is None:
                problem = trust.key_problem(key.fingerprint) or "not verified"
                raise Refused(
                    RefusalCode.CONFIGURATION_UNVERIFIED,
                    f"the new trust root's key is not accepted here: {problem}; unset SPECIALISTS_TRUST_ROOT "
                    "to register the first actor, then set it to the fingerprint printed",
                )
            self._event(
                session, "actor_registered", Signer(actor_id, key), RecordKind.ACTOR, actor_id, "trust root"
            )
            return actors.actor_record(trust, state.row)

    def register_actor(self, actor_id: str, name: str, public_key: str, signer: Signer) -> ActorRecord:
        """Register a human actor holding ``public_key``, signed by ``signer``; see
        :func:`store.actors.register_actor` for the rules."""
        actors.check_actor_id(actor_id)
        actors.check_actor_name(name)
        with self._configuration(write=True) as (session, trust):
            actors.register_actor(session, trust, actor_id, name, public_key, signer, self._now())
            self._event(
                session,
                "actor_registered",
                signer,
                RecordKind.ACTOR,
                actor_id,
                f"registered by {signer.actor_id}",
            )
            return self._actor_record(session, actor_id)

    def deactivate_actor(self, actor_id: str, signer: Signer) -> ActorRecord:
        """Deactivate ``actor_id`` as ``signer`` (audited); see :func:`store.actors.deactivate_actor`."""
        with self._configuration(write=True) as (session, trust):
            actors.deactivate_actor(session, trust, actor_id, signer, self._now())
            self._event(
                session,
                "actor_deactivated",
                signer,
                RecordKind.ACTOR,
                actor_id,
                f"deactivated by {signer.actor_id}",
            )
            return self._actor_record(session, actor_id)

    def rotate_actor_key(self, signer: Signer, new_key: ActorKey) -> ActorRecord:
        """Replace the signer's key with ``new_key`` (signed with the old one, which is retired from
        now on; audited). Raises the signer refusals or ``duplicate_key``."""
        with self._configuration(write=True) as (session, trust):
            actors.rotate_key(session, trust, signer, new_key.public_key, self._now())
            self._event(
                session,
                "actor_key_rotated",
                signer,
                RecordKind.ACTOR_KEY,
                new_key.fingerprint,
                f"{signer.actor_id} replaced key {signer.fingerprint} with {new_key.fingerprint}",
            )
            return self._actor_record(session, signer.actor_id)

    def list_actors(self) -> list[ActorRecord]:
        """All registered actors, in order of registration, with their keys."""
        with self._configuration() as (_, trust):
            return actors.list_actors(trust)

    def get_actor(self, actor_id: str) -> ActorRecord:
        """The verified actor ``actor_id``. Raises ``unknown_actor`` (not found) or
        ``configuration_unverified``."""
        with self._configuration() as (session, _):
            return self._actor_record(session, actor_id)

    def actor_exists(self, actor_id: str) -> bool:
        """Whether ``actor_id`` is registered and its record verified (``configuration_unverified``
        when its row exists but is not verified)."""
        with self._configuration() as (_, trust):
            return trust.actor(actor_id) is not None

    def require_signer(self, signer: Signer) -> ActorRecord:
        """The signer's record when it may act now: registered, verified, active, with its key in
        force. Raises ``unknown_actor`` (not found), ``configuration_unverified``,
        ``actor_deactivated``, ``actor_key_retired``, ``actor_key_mismatch`` or
        ``actor_key_missing`` (refused)."""
        with self._configuration() as (_, trust):
            state = trust.require_signer(signer)
            return actors.actor_record(trust, state.row)

    def require_active_actor(self, actor_id: str) -> ActorRecord:
        """The verified record of ``actor_id`` when it is active. Raises :class:`NotFound`
        ``unknown_actor`` or :class:`Refused` ``configuration_unverified``, ``actor_deactivated``."""
        record = self.get_actor(actor_id)
        if not record.active:
            raise Refused(
                RefusalCode.ACTOR_DEACTIVATED,
                f"actor {actor_id!r} was deactivated by {record.deactivated_by}: its actions are refused",
            )
        return record

    def action_key(self, actor_id: str, fingerprint: str) -> str:
        """The public key that must have signed a proof of ``actor_id`` made with the key
        ``fingerprint``: the actor's key in force, when it is that key.

        Raises :class:`NotFound` ``unknown_actor``, or :class:`Refused` ``configuration_unverified``
        (the actor's row, or the key, is not verified), ``actor_deactivated``, ``actor_key_retired``
        (an earlier key of the actor), ``proof_invalid`` (another actor's key), ``actor_key_unknown``
        (a key nobody holds) or ``actor_key_missing``.
        """
        with self._configuration() as (_, trust):
            state = trust.actor(actor_id)
            if state is None:
                raise NotFound(RefusalCode.UNKNOWN_ACTOR, f"actor {actor_id!r} is not registered")
            if not state.active:
                raise Refused(
                    RefusalCode.ACTOR_DEACTIVATED,
                    f"actor {actor_id!r} was deactivated by {state.row.deactivated_by}: "
                    "its actions are refused",
                )
            key = trust.key_row(fingerprint)
            if key is not None and key.actor_id == actor_id:
                trust.require(RecordKind.ACTOR_KEY, [key])
            mismatch = trust.key_mismatch(state, fingerprint)
            if mismatch is None:
                assert state.current_key is not None
                return str(state.current_key.public_key)
            code, message = mismatch
            if code == "actor_key_mismatch":
                if key is None:
                    code, message = (
                        RefusalCode.ACTOR_KEY_UNKNOWN,
                        f"the proof is signed with a key no actor holds ({fingerprint[:16]}…)",
                    )
                else:
                    code = RefusalCode.PROOF_INVALID
                    message = f"the proof for {actor_id!r} is signed with a key of {key.actor_id!r}"
            raise Refused(code, message)

    # Configuration attestation and audit

    def unverified_records(self) -> list[UnverifiedRecord]:
        """Every configuration record that is not verified, with why and what it says."""
        with self._reading() as session:
            return attestation.unverified_records(session, self._trust(session))

    def keyless_actors(self) -> list[str]:
        """Actors holding no verified key (an attestation issues each one)."""
        with self._reading() as session:
            return attestation.keyless_actors(session, self._trust(session))

    def needs_bootstrap(self) -> bool:
        """Whether no actor holds a verified key yet (the first attestation needs the action token)."""
        with self._reading() as session:
            return attestation.needs_bootstrap(session, self._trust(session))

    def attest(self, signer: Signer, *, token: bytes | None, issue: dict[str, str]) -> list[UnverifiedRecord]:
        """Sign every unverified configuration record as ``signer`` (audited); see
        :func:`store.attestation.attest`."""
        with self._configuration(write=True) as (session, _):
            if token is not None:
                self._adopt(session, token_fingerprint(token))
            signed = attestation.attest(
                session, lambda: self._trust(session), signer, self._now(), token=token, issue=issue
            )
            for record in signed:
                self._event(
                    session,
                    "configuration_attested",
                    signer,
                    RecordKind(record.kind),
                    record.id,
                    record.reason,
                )
            for actor_id in sorted(issue):
                self._event(
                    session,
                    "actor_key_issued",
                    signer,
                    RecordKind.ACTOR,
                    actor_id,
                    f"key issued by {signer.actor_id}",
                )
            return signed

    def configuration_events(self, limit: int = 100) -> list[ConfigurationEvent]:
        """Up to ``limit`` configuration audit events, newest first."""
        _check_limit(limit)
        with self._reading() as session:
            return configuration_events.list_events(session, limit)

    # Action token

    def adopt_token_fingerprint(self, fingerprint: str) -> bool:
        """Check ``fingerprint`` against the adopted action token's; adopt it when there is none.

        Returns ``True`` when the fingerprint was adopted now. Raises :class:`Refused`
        (``action_token_mismatch``) when a different token was adopted before.
        """
        with self._writing() as session:
            return self._adopt(session, fingerprint)

    def _adopt(self, session: Session, fingerprint: str) -> bool:
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
        """Spend the nonce of a verified proof; ``False`` when it was spent already.

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

    def set_case_status(self, case_id: str, status: CaseStatus, actor: str) -> ResearchCase:
        """Move the case ``case_id`` to ``status`` as the person ``actor`` (see
        :func:`store.research.set_case_status`); nothing is written on a refusal."""
        research.check_case_id(case_id)
        with self._writing() as session:
            return research.set_case_status(session, case_id, status, actor, self._now())

    def attach_note(
        self, case_id: str, evidence_id: str, content: str, source_ref: str, actor: str
    ) -> tuple[EvidenceRecord, bool]:
        """Attach an ``analyst_note`` once under ``evidence_id`` (see :func:`store.research.attach_note`);
        returns the record and whether it was added now."""
        with self._writing() as session:
            return research.attach_note(
                session, case_id, evidence_id, content, source_ref, actor, self._now()
            )

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

    # The goal queue's archive (store/queue_archive.py)

    def archive_queue_items(self, queue_id: str, items: list[QueueItem], archived_at: dt.datetime) -> None:
        """Write ended items of ``queue_id`` whole (idempotent; never over a newer copy)."""
        with self._writing() as session:
            queue_archive.archive_items(session, queue_id, items, archived_at)

    def archived_queue_item(self, queue_id: str, key: str) -> tuple[QueueItem, dt.datetime] | None:
        """The archived item ``key`` of ``queue_id`` and when it was archived, or ``None``."""
        with self._reading() as session:
            return queue_archive.archived_item(session, queue_id, key)

    def archived_queue_item_named(self, queue_id: str, name: str) -> tuple[QueueItem, dt.datetime] | None:
        """The archived item of ``queue_id`` that had the key ``name`` (its own or a former one)."""
        with self._reading() as session:
            return queue_archive.archived_named(session, queue_id, name)

    def archived_queue_items_matching(
        self, queue_id: str, *, fingerprints: list[str], request_id: str | None = None
    ) -> list[tuple[QueueItem, dt.datetime]]:
        """The archived items of ``queue_id`` holding one of the intake ``fingerprints`` or added with
        ``request_id``."""
        with self._reading() as session:
            return queue_archive.archived_matching(
                session, queue_id, fingerprints=fingerprints, request_id=request_id
            )

    def list_archived_queue_items(
        self, queue_id: str, *, limit: int = 100
    ) -> tuple[list[tuple[QueueItem, dt.datetime]], int]:
        """The newest ``limit`` archived items of ``queue_id`` and how many the archive holds."""
        _check_limit(limit)
        with self._reading() as session:
            return queue_archive.list_archived(session, queue_id, limit=limit)

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

    def _trust(self, session: Session) -> Trust:
        return Trust(session, self._anchor)

    def _actor_record(self, session: Session, actor_id: str) -> ActorRecord:
        trust = self._trust(session)
        state = trust.actor(actor_id)
        if state is None:
            raise NotFound(RefusalCode.UNKNOWN_ACTOR, f"actor {actor_id!r} is not registered")
        return actors.actor_record(trust, state.row)

    def _selected(self, session: Session, signer: Signer, record: ModelSelectionRecord) -> None:
        chosen = record.selection
        parts = [f"primary {chosen.primary}"]
        if chosen.fallbacks:
            parts.append(f"fallbacks {', '.join(chosen.fallbacks)} ({chosen.fallback_mode.value})")
        parts.extend(
            f"{name} {model}"
            for name, model in (("support", chosen.support), ("advisory", chosen.advisory))
            if model
        )
        self._event(
            session,
            "models_selected",
            signer,
            RecordKind.MODEL_SELECTION,
            None,
            "models selected: " + "; ".join(parts),
        )

    def _event(
        self,
        session: Session,
        kind: str,
        signer: Signer,
        record_kind: RecordKind,
        record_id: str | None,
        message: str,
    ) -> None:
        configuration_events.record_event(
            session,
            kind,
            message,
            self._now(),
            actor=signer.actor_id,
            record_kind=record_kind.value,
            record_id=record_id,
        )

    @contextmanager
    def _configuration(self, *, write: bool = False) -> Iterator[tuple[Session, Trust]]:
        """A transaction with the verified view of actors and keys; a ``configuration_unverified``
        refusal raised inside is recorded in the configuration audit log (its own transaction)
        before it propagates."""
        try:
            with self._writing() if write else self._reading() as session:
                yield session, self._trust(session)
        except ConfigurationUnverified as refusal:
            self._record_refusal(refusal)
            raise

    def _record_refusal(self, refusal: ConfigurationUnverified) -> None:
        # The refusal is the answer; failing to audit it must not hide it.
        with contextlib.suppress(Exception), self._writing() as session:
            for problem in refusal.problems:
                configuration_events.record_event(
                    session,
                    RefusalCode.CONFIGURATION_UNVERIFIED,
                    problem.describe(),
                    self._now(),
                    record_kind=problem.kind.value,
                    record_id=problem.record_id,
                )

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


MAX_LIMIT: Final = 100_000
"""The most rows one listing asks for (a bound the database's integers always hold)."""


def _check_limit(limit: int) -> None:
    if limit < 1 or limit > MAX_LIMIT:
        raise InvalidInput("invalid_limit", f"limit must be 1 to {MAX_LIMIT}, not {limit}")


def _describe_policy(record: PolicyRecord) -> str:
    return (
        f"mode {record.policy.mode.value}, ceiling {record.policy.maximum_automatic_tier.value}, "
        f"set by {record.set_by or 'default'}"
    )
