"""The SQLAlchemy schema of the store: operator configuration, run projection, spent proof nonces,
worktree claims, research cases and their evidence, research job outputs (docs/architecture.md "Storage").

Every change to these classes ships with an Alembic migration in ``store/migrations/versions/`` and a
new :data:`SCHEMA_REVISION`. Times are stored in UTC and read back timezone-aware.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Final

from sqlalchemy import (
    JSON,
    Boolean,
    CheckConstraint,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    true,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator

from contracts.ids import MAX_REQUEST_ID_CHARS

SCHEMA_REVISION: Final = "0016"
"""The Alembic head this code expects; a store at another revision is not read without upgrading."""

ACTOR_ID_LENGTH: Final = 64
ACTOR_NAME_LENGTH: Final = 120
ALIAS_LENGTH: Final = 64
BRANCH_LENGTH: Final = 255
MODEL_ID_LENGTH: Final = 200
ENUM_LENGTH: Final = 32

NAMING_CONVENTION: Final = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class UtcDateTime(TypeDecorator[dt.datetime]):
    """A timezone-aware UTC timestamp on every backend.

    Refuses naive datetimes on write (their zone is unknown). SQLite keeps no zone, so the value is
    stored as naive UTC and marked UTC again on read.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: dt.datetime | None, dialect: Dialect) -> dt.datetime | None:
        if value is None:
            return None
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(f"refusing to store a naive datetime {value!r}: give a UTC time")
        value = value.astimezone(dt.UTC)
        if dialect.name == "sqlite":
            return value.replace(tzinfo=None)
        return value

    def process_result_value(self, value: Any, dialect: Dialect) -> dt.datetime | None:
        if value is None:
            return None
        if not isinstance(value, dt.datetime):
            raise TypeError(f"expected a datetime from the database, got {type(value).__name__}")
        if value.tzinfo is None:
            return value.replace(tzinfo=dt.UTC)
        return value.astimezone(dt.UTC)


class Base(DeclarativeBase):
    """Declarative base of every store table."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)


FINGERPRINT_LENGTH: Final = 64
PUBLIC_KEY_LENGTH: Final = 64
SIGNATURE_LENGTH: Final = 128


class SignedRecord:
    """The signature every configuration record carries (docs/architecture.md "Configuration"): who
    signed its canonical content (``contracts.identity.canonical_record``) with which key, when.
    Empty on rows written before signatures existed, which are refused until attested."""

    signed_by: Mapped[str | None] = mapped_column(String(ACTOR_ID_LENGTH))
    signed_key: Mapped[str | None] = mapped_column(String(FINGERPRINT_LENGTH))
    signed_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime())
    signature: Mapped[str | None] = mapped_column(String(SIGNATURE_LENGTH))


class Deactivatable:
    """A record that is deactivated rather than deleted: ``active`` false, with who and when."""

    active: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())
    deactivated_by: Mapped[str | None] = mapped_column(String(ACTOR_ID_LENGTH))
    deactivated_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime())


class ActorRow(SignedRecord, Deactivatable, Base):
    """A registered human actor. ``registered_by`` is empty only for the first actor."""

    __tablename__ = "actors"

    id: Mapped[str] = mapped_column(String(ACTOR_ID_LENGTH), primary_key=True)
    name: Mapped[str] = mapped_column(String(ACTOR_NAME_LENGTH))
    registered_by: Mapped[str | None] = mapped_column(String(ACTOR_ID_LENGTH), ForeignKey("actors.id"))
    registered_at: Mapped[dt.datetime] = mapped_column(UtcDateTime())


class SessionKeyRow(Base):
    """A session key an actor delegated to (a Mission Control sign-in): the
    :class:`contracts.proofs.SessionDelegation` its own key ``actor_key`` signed, letting the session
    key sign configuration records for it from ``issued_at`` until ``expires_at``. Never edited."""

    __tablename__ = "session_keys"

    fingerprint: Mapped[str] = mapped_column(String(FINGERPRINT_LENGTH), primary_key=True)
    actor_id: Mapped[str] = mapped_column(String(ACTOR_ID_LENGTH), ForeignKey("actors.id"))
    actor_key: Mapped[str] = mapped_column(String(FINGERPRINT_LENGTH))
    public_key: Mapped[str] = mapped_column(String(PUBLIC_KEY_LENGTH))
    issued_at: Mapped[dt.datetime] = mapped_column(UtcDateTime())
    expires_at: Mapped[dt.datetime] = mapped_column(UtcDateTime())
    signature: Mapped[str] = mapped_column(String(SIGNATURE_LENGTH))


class ActorKeyRow(SignedRecord, Base):
    """One public key of an actor (Ed25519, raw bytes in base64), never edited or removed.

    Signed by whoever authorised it: the registering actor, the actor itself with its previous key (a
    rotation), or — for the trust root — itself, with ``anchor`` the HMAC of the action token over
    the record. The actor's key in force is its newest verified key; the others are retired."""

    __tablename__ = "actor_keys"
    __table_args__ = (Index("ix_actor_keys_actor_id", "actor_id"),)

    fingerprint: Mapped[str] = mapped_column(String(FINGERPRINT_LENGTH), primary_key=True)
    actor_id: Mapped[str] = mapped_column(String(ACTOR_ID_LENGTH), ForeignKey("actors.id"))
    public_key: Mapped[str] = mapped_column(String(PUBLIC_KEY_LENGTH))
    added_at: Mapped[dt.datetime] = mapped_column(UtcDateTime())
    anchor: Mapped[str | None] = mapped_column(String(FINGERPRINT_LENGTH))


class AutomationPolicyRow(SignedRecord, Base):
    """One write of the automation policy; the policy in force is the row with the highest id."""

    __tablename__ = "automation_policy"
    __table_args__ = ({"sqlite_autoincrement": True},)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    mode: Mapped[str] = mapped_column(String(ENUM_LENGTH))
    maximum_automatic_tier: Mapped[str] = mapped_column(String(ENUM_LENGTH))
    set_by: Mapped[str] = mapped_column(String(ACTOR_ID_LENGTH), ForeignKey("actors.id"))
    set_at: Mapped[dt.datetime] = mapped_column(UtcDateTime())


class ModelSelectionRow(SignedRecord, Base):
    """One model selection; the selection in force is the row with the highest id."""

    __tablename__ = "model_selections"
    __table_args__ = ({"sqlite_autoincrement": True},)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    primary: Mapped[str] = mapped_column(String(MODEL_ID_LENGTH))
    fallbacks: Mapped[list[str]] = mapped_column(JSON)
    fallback_mode: Mapped[str] = mapped_column(String(ENUM_LENGTH))
    support: Mapped[str | None] = mapped_column(String(MODEL_ID_LENGTH))
    advisory: Mapped[str | None] = mapped_column(String(MODEL_ID_LENGTH), nullable=True)
    """The advisory class's model; NULL (every row before 0013) when none was selected."""
    efforts: Mapped[dict[str, str] | None] = mapped_column(JSON, nullable=True)
    """Reasoning effort by model class; NULL (every row before 0012) when none was selected."""
    selected_by: Mapped[str] = mapped_column(String(ACTOR_ID_LENGTH), ForeignKey("actors.id"))
    selected_at: Mapped[dt.datetime] = mapped_column(UtcDateTime())


class RepositoryRow(SignedRecord, Deactivatable, Base):
    """An allow-listed repository: alias → absolute path of a git working tree, and its configuration
    (``contracts.config.RepositoryConfig`` as JSON, every key present)."""

    __tablename__ = "repositories"

    alias: Mapped[str] = mapped_column(String(ALIAS_LENGTH), primary_key=True)
    path: Mapped[str] = mapped_column(Text)
    default_branch: Mapped[str] = mapped_column(String(BRANCH_LENGTH))
    added_by: Mapped[str] = mapped_column(String(ACTOR_ID_LENGTH), ForeignKey("actors.id"))
    added_at: Mapped[dt.datetime] = mapped_column(UtcDateTime())
    config: Mapped[dict[str, Any]] = mapped_column(JSON)


RUN_ID_LENGTH: Final = 20
PROFILE_ID_LENGTH: Final = 64
DIGEST_LENGTH: Final = 64
TITLE_LENGTH: Final = 200
EVENT_KIND_LENGTH: Final = 64


class RunRow(Base):
    """The projection of one specialist run (Temporal holds the truth; this makes runs listable)."""

    __tablename__ = "runs"
    __table_args__ = (
        Index("ix_runs_status", "status"),
        Index("ix_runs_created_at", "created_at"),
    )

    run_id: Mapped[str] = mapped_column(String(RUN_ID_LENGTH), primary_key=True)
    status: Mapped[str] = mapped_column(String(ENUM_LENGTH))
    tier: Mapped[str | None] = mapped_column(String(ENUM_LENGTH))
    automatic: Mapped[bool] = mapped_column(Boolean)
    primary: Mapped[str | None] = mapped_column(String(PROFILE_ID_LENGTH))
    reviewer: Mapped[str | None] = mapped_column(String(PROFILE_ID_LENGTH))
    risk: Mapped[str | None] = mapped_column(String(ENUM_LENGTH))
    repo_alias: Mapped[str | None] = mapped_column(String(ALIAS_LENGTH))
    title: Mapped[str] = mapped_column(String(TITLE_LENGTH))
    contract_sha256: Mapped[str | None] = mapped_column(String(DIGEST_LENGTH))
    request_id: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[dt.datetime] = mapped_column(UtcDateTime())
    updated_at: Mapped[dt.datetime] = mapped_column(UtcDateTime())


class RunEventRow(Base):
    """One audit event of a run, keyed by (run id, sequence number)."""

    __tablename__ = "run_events"

    run_id: Mapped[str] = mapped_column(String(RUN_ID_LENGTH), ForeignKey("runs.run_id"), primary_key=True)
    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    at: Mapped[dt.datetime] = mapped_column(UtcDateTime())
    kind: Mapped[str] = mapped_column(String(EVENT_KIND_LENGTH))
    actor: Mapped[str | None] = mapped_column(String(ACTOR_ID_LENGTH))
    data: Mapped[dict[str, Any]] = mapped_column(JSON)


QUEUE_ID_LENGTH: Final = 255
QUEUE_KEY_LENGTH: Final = 32


class QueueArchiveRow(Base):
    """An ended goal-queue item moved out of its queue's workflow state (docs/architecture.md "Goal
    queue", "Archive"): the whole item as JSON, keyed by the queue's workflow id and the item's key."""

    __tablename__ = "queue_archive"
    __table_args__ = (
        Index("ix_queue_archive_queue_id_archived_at", "queue_id", "archived_at"),
        Index("ix_queue_archive_queue_id_intake_fingerprint", "queue_id", "intake_fingerprint"),
        Index("ix_queue_archive_queue_id_request_id", "queue_id", "request_id"),
    )

    queue_id: Mapped[str] = mapped_column(String(QUEUE_ID_LENGTH), primary_key=True)
    key: Mapped[str] = mapped_column(String(QUEUE_KEY_LENGTH), primary_key=True)
    status: Mapped[str] = mapped_column(String(ENUM_LENGTH))
    title: Mapped[str] = mapped_column(String(TITLE_LENGTH))
    updated_at: Mapped[dt.datetime] = mapped_column(UtcDateTime())
    archived_at: Mapped[dt.datetime] = mapped_column(UtcDateTime())
    item: Mapped[dict[str, Any]] = mapped_column(JSON)
    intake_fingerprint: Mapped[str | None] = mapped_column(String(DIGEST_LENGTH), nullable=True)
    """The intake finding the item held (``item.intake.fingerprint``): a scan proposes it again never."""
    request_id: Mapped[str | None] = mapped_column(String(MAX_REQUEST_ID_CHARS), nullable=True)
    """The request id of the ``queue add`` that added the item (``item.added_by.request_id``)."""


class QueueArchiveNameRow(Base):
    """Every key an archived item had — its own, and a proposal's ``Q-<n>`` before its approval renamed
    it — so a command naming either finds it (keys are never issued twice in a queue)."""

    __tablename__ = "queue_archive_names"

    queue_id: Mapped[str] = mapped_column(String(QUEUE_ID_LENGTH), primary_key=True)
    name: Mapped[str] = mapped_column(String(QUEUE_KEY_LENGTH), primary_key=True)
    key: Mapped[str] = mapped_column(String(QUEUE_KEY_LENGTH))


SETTING_KEY_LENGTH: Final = 64


class DeploymentSettingRow(Base):
    """A deployment-wide setting, e.g. the fingerprint of the action token the deployment adopted."""

    __tablename__ = "deployment_settings"

    key: Mapped[str] = mapped_column(String(SETTING_KEY_LENGTH), primary_key=True)
    value: Mapped[str] = mapped_column(Text)
    set_at: Mapped[dt.datetime] = mapped_column(UtcDateTime())


PROVIDER_LENGTH: Final = 64
ENV_NAME_LENGTH: Final = 64


class ModelRow(SignedRecord, Deactivatable, Base):
    """A registered model (``provider:name``): where the worker reaches it, the name of the environment
    variable holding its key (never the key), its call timeout and its in-flight ceiling."""

    __tablename__ = "models"
    __table_args__ = (
        CheckConstraint("timeout_s >= 1 AND timeout_s <= 600", name="timeout_s_range"),
        CheckConstraint("ceiling >= 1 AND ceiling <= 1000", name="ceiling_range"),
    )

    id: Mapped[str] = mapped_column(String(MODEL_ID_LENGTH), primary_key=True)
    provider: Mapped[str] = mapped_column(String(PROVIDER_LENGTH))
    name: Mapped[str] = mapped_column(String(MODEL_ID_LENGTH))
    base_url: Mapped[str | None] = mapped_column(Text)
    api_key_env: Mapped[str | None] = mapped_column(String(ENV_NAME_LENGTH))
    timeout_s: Mapped[int] = mapped_column(Integer)
    ceiling: Mapped[int] = mapped_column(Integer)
    added_by: Mapped[str] = mapped_column(String(ACTOR_ID_LENGTH), ForeignKey("actors.id"))
    added_at: Mapped[dt.datetime] = mapped_column(UtcDateTime())
    # A registered replay model's recordings file in canonical form (contracts.recordings); NULL
    # for every other model.
    recordings: Mapped[str | None] = mapped_column(Text)


NONCE_LENGTH: Final = 64
ACTION_LENGTH: Final = 64
SPENT_PROOF_RUN_ID_LENGTH: Final = 200
SPENDER_LENGTH: Final = 128


class SpentProofRow(Base):
    """The nonce of a proof of the action token that the authorisation activity accepted.

    A nonce is spent once, by one Temporal workflow execution (``spent_by``: its run id), so a proof
    taken from a finished workflow's history cannot authorise a new execution of the same workflow id.
    Rows outlive the proof's 15 minutes of validity by far and are then pruned (``spent_at``).
    """

    __tablename__ = "spent_proofs"
    __table_args__ = (Index("ix_spent_proofs_spent_at", "spent_at"),)

    nonce: Mapped[str] = mapped_column(String(NONCE_LENGTH), primary_key=True)
    action: Mapped[str] = mapped_column(String(ACTION_LENGTH))
    run_id: Mapped[str] = mapped_column(String(SPENT_PROOF_RUN_ID_LENGTH))
    actor: Mapped[str] = mapped_column(String(ACTOR_ID_LENGTH))
    spent_by: Mapped[str] = mapped_column(String(SPENDER_LENGTH))
    spent_at: Mapped[dt.datetime] = mapped_column(UtcDateTime())


CLAIM_RUN_ID_LENGTH: Final = 64
WORKER_LENGTH: Final = 200


class WorktreeClaimRow(Base):
    """A worker's claim of one execution attempt of a run: at most one worker ever runs it.

    The primary key (run id, execution attempt) is the claim: of two workers inserting it, the second
    fails on the key. ``worktree_attempt`` is the number of the attempt directory the worker runs it in.
    Claims are never released or rewritten.
    """

    __tablename__ = "worktree_claims"
    __table_args__ = (
        CheckConstraint("execution_attempt >= 1", name="execution_attempt_positive"),
        CheckConstraint("worktree_attempt >= 1", name="worktree_attempt_positive"),
    )

    run_id: Mapped[str] = mapped_column(String(CLAIM_RUN_ID_LENGTH), primary_key=True)
    execution_attempt: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    worker: Mapped[str] = mapped_column(String(WORKER_LENGTH))
    worktree_attempt: Mapped[int] = mapped_column(Integer)
    claimed_at: Mapped[dt.datetime] = mapped_column(UtcDateTime())


CASE_ID_LENGTH: Final = 16
EVIDENCE_ID_LENGTH: Final = 16
SUBJECT_KIND_LENGTH: Final = 40
SUBJECT_TEXT_LENGTH: Final = 200
SOURCE_REF_LENGTH: Final = 500


class ResearchCaseRow(Base):
    """A research case (``RSC-`` + 12): its subject, who created it and when, and its status (the
    only thing that changes, by a person)."""

    __tablename__ = "research_cases"

    case_id: Mapped[str] = mapped_column(String(CASE_ID_LENGTH), primary_key=True)
    subject_kind: Mapped[str] = mapped_column(String(SUBJECT_KIND_LENGTH))
    subject_identifier: Mapped[str] = mapped_column(String(SUBJECT_TEXT_LENGTH))
    subject_title: Mapped[str] = mapped_column(String(SUBJECT_TEXT_LENGTH))
    created_by: Mapped[str] = mapped_column(String(ACTOR_ID_LENGTH), ForeignKey("actors.id"))
    created_at: Mapped[dt.datetime] = mapped_column(UtcDateTime())
    # Migration 0014: where the case stands (contracts.research.CaseStatus); only a person moves it.
    status: Mapped[str] = mapped_column(String(ENUM_LENGTH), default="open", server_default="open")
    status_changed_by: Mapped[str | None] = mapped_column(String(ACTOR_ID_LENGTH))
    status_changed_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime())


class ResearchEvidenceRow(Base):
    """One evidence record of a case (``EVD-`` + 12). ``seq`` orders the records of a case by addition
    (1, 2, ...); ``sha256`` is the digest of ``content`` in UTF-8, computed by the store. Content is
    never edited: a record is only deactivated (``active`` false, with who and when)."""

    __tablename__ = "research_evidence"
    __table_args__ = (
        UniqueConstraint("case_id", "seq", name="uq_research_evidence_case_id_seq"),
        CheckConstraint("seq >= 1", name="seq_positive"),
    )

    evidence_id: Mapped[str] = mapped_column(String(EVIDENCE_ID_LENGTH), primary_key=True)
    case_id: Mapped[str] = mapped_column(
        String(CASE_ID_LENGTH), ForeignKey("research_cases.case_id"), index=True
    )
    seq: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(ENUM_LENGTH))
    content: Mapped[str] = mapped_column(Text)
    source_ref: Mapped[str] = mapped_column(String(SOURCE_REF_LENGTH))
    sha256: Mapped[str] = mapped_column(String(DIGEST_LENGTH))
    active: Mapped[bool] = mapped_column(Boolean)
    added_by: Mapped[str] = mapped_column(String(ACTOR_ID_LENGTH), ForeignKey("actors.id"))
    added_at: Mapped[dt.datetime] = mapped_column(UtcDateTime())
    deactivated_by: Mapped[str | None] = mapped_column(String(ACTOR_ID_LENGTH), ForeignKey("actors.id"))
    deactivated_at: Mapped[dt.datetime | None] = mapped_column(UtcDateTime())


JOB_ID_LENGTH: Final = 120
TEAM_ID_LENGTH: Final = 20


class ResearchJobOutputRow(Base):
    """The validated output of one research model job, written once per job id and never edited.

    ``output_sha256`` is the RFC 8785 canonical-JSON sha256 of ``output``; ``pack`` is the context pack
    the job was given, with its sha256 (both null when none was recorded). Nothing links job outputs to
    evidence: model output is never evidence."""

    __tablename__ = "research_job_outputs"
    __table_args__ = (Index("ix_research_job_outputs_team_id", "team_id"),)

    job_id: Mapped[str] = mapped_column(String(JOB_ID_LENGTH), primary_key=True)
    team_id: Mapped[str] = mapped_column(String(TEAM_ID_LENGTH))
    kind: Mapped[str] = mapped_column(String(ENUM_LENGTH))
    profile_id: Mapped[str] = mapped_column(String(PROFILE_ID_LENGTH))
    model_id: Mapped[str] = mapped_column(String(MODEL_ID_LENGTH))
    output: Mapped[dict[str, Any]] = mapped_column(JSON)
    output_sha256: Mapped[str] = mapped_column(String(DIGEST_LENGTH))
    pack: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True))
    pack_sha256: Mapped[str | None] = mapped_column(String(DIGEST_LENGTH))
    created_at: Mapped[dt.datetime] = mapped_column(UtcDateTime())


EVENT_CODE_LENGTH: Final = 64
RECORD_ID_LENGTH: Final = 200


class ConfigurationEventRow(Base):
    """One configuration audit event (docs/architecture.md "Configuration"): a protected configuration
    action taken (``actor_registered``, ``actor_deactivated``, ``actor_key_rotated``,
    ``model_deactivated``, ``repository_deactivated``, ``configuration_attested``) or a record refused
    because it carries no valid signature (``configuration_unverified``). Appended, never edited."""

    __tablename__ = "configuration_events"
    __table_args__ = ({"sqlite_autoincrement": True},)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    at: Mapped[dt.datetime] = mapped_column(UtcDateTime())
    kind: Mapped[str] = mapped_column(String(EVENT_CODE_LENGTH))
    actor: Mapped[str | None] = mapped_column(String(ACTOR_ID_LENGTH))
    record_kind: Mapped[str | None] = mapped_column(String(ENUM_LENGTH))
    record_id: Mapped[str | None] = mapped_column(String(RECORD_ID_LENGTH))
    message: Mapped[str] = mapped_column(Text)
