"""Activity ``build_context_pack``: gather one job's evidence and build its context pack.

For ``file:PATH`` evidence refs of a run whose contract froze an allow-listed repository's base
commit, the file is read *at that commit* from git's object database (``git cat-file``; the path
names an object, it never touches the file system) and its text goes into the pack. Other refs go in
as references. The repository's tracked paths are listed (the first 200, with the total).

Bounds: the rendered request (instructions + pack) is at most 60 KiB. Over it, the job fails with the
non-retryable ``request_too_large``, naming the request's size and the largest evidence files and
asking the operator to narrow the work item. Nothing is shortened. A pack that holds credential
material fails with the non-retryable ``secret_in_context``, naming the kind and line, never the
secret (``activities.secret_scan``). A file that is not text (not
UTF-8) is listed with its size and a note instead of its content.
"""

from __future__ import annotations

from pathlib import Path

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.config import ActivityConfig
from activities.context import (
    ContractProfileUnavailable,
    build_instructions,
    build_pack,
    contract_profile,
)
from activities.errors import failure, refusal
from activities.research_packs import ResearchInputChanged, build_research_pack
from activities.secret_scan import scanner_for, summary
from activities.store_access import SharedStore
from catalog.schema import Profile
from contracts.context_packs import (
    MAX_TRACKED_PATHS,
    ContextPack,
    ContextPackResult,
    EvidenceEntry,
    RepositoryContext,
)
from contracts.errors import ErrorType, NotFound, OperatorError, ServiceUnavailable
from contracts.hashing import canonical_sha256
from contracts.model_jobs import ContextPackRequest
from contracts.output import MAX_REQUEST_BYTES
from contracts.pack_text import render_pack
from contracts.temporal_names import ActivityName
from contracts.worktree import ExecutionFailure
from runtime import git_repository as git
from runtime.logs import run_logger

FILE_REF = "file:"


def _fail(error_type: str, message: str) -> ApplicationError:
    return ApplicationError(message, type=error_type, non_retryable=True)


class ContextPackActivities:
    """``build_context_pack`` bound to the deployment's catalog and store (for repository paths)."""

    def __init__(self, config: ActivityConfig, store: SharedStore) -> None:
        self._config = config
        self._store = store
        self._scanner = scanner_for(config.action_token, config.deployment_secrets)

    @activity.defn(name=ActivityName.BUILD_CONTEXT_PACK)
    def build_context_pack(self, request: ContextPackRequest) -> ContextPackResult:
        """Build the job's pack; returns it with its sha256 and the rendered request size in bytes.

        Raises non-retryable ``ApplicationError``: ``catalog_changed`` (the worker's catalog is not
        the contract's, or lacks the profile), ``request_too_large`` (over 60 KiB: narrow the work
        item), ``secret_in_context`` (credential material in the pack), ``base_commit_unavailable``
        (the contract's base commit is gone from the repository); a git or store failure is retryable.
        """
        try:
            profile = contract_profile(self._config.catalog_path, request.catalog_sha256, request.profile_id)
        except ContractProfileUnavailable as error:
            raise _fail(ErrorType.CATALOG_CHANGED, str(error)) from None
        try:
            return self._build(request, profile)
        except ServiceUnavailable as error:  # git or the store: retried
            raise refusal(error) from None

    def _build(self, request: ContextPackRequest, profile: Profile) -> ContextPackResult:
        if request.context.research is not None:
            return self._finish(request, self._research_pack(request, profile), profile, [])
        tree = self._repository_tree(request)
        repository = None
        if tree is not None and request.repo_alias is not None and request.base_commit is not None:
            if not git.commit_exists(tree, request.base_commit):
                raise _fail(
                    ExecutionFailure.BASE_COMMIT_UNAVAILABLE,
                    f"base commit {request.base_commit} is no longer a commit in repository "
                    f"{request.repo_alias!r}",
                )
            paths = git.tracked_paths(tree, request.base_commit)
            repository = RepositoryContext(
                alias=request.repo_alias,
                base_commit=request.base_commit,
                tracked_paths=paths[:MAX_TRACKED_PATHS],
                tracked_total=len(paths),
            )
        evidence = [self._evidence(ref, tree, request.base_commit) for ref in request.context.evidence_refs]
        pack = build_pack(profile, request.kind, request.context, request.task_type, evidence, repository)
        return self._finish(request, pack, profile, evidence)

    def _research_pack(self, request: ContextPackRequest, profile: Profile) -> ContextPack:
        """A research job's pack from the case's records and the team's stored outputs (by reference).
        Raises ``research_input_changed`` (non-retryable) when one no longer matches its sha256."""
        research = request.context.research
        assert research is not None
        store = self._store.get()
        try:
            case = store.get_case(research.case_id)
            refs = [*research.prior_results, *([research.under_review] if research.under_review else [])]
            outputs = {ref.job_id: store.get_job_output(ref.job_id) for ref in refs}
        except NotFound as error:
            raise _fail(ErrorType.RESEARCH_INPUT_CHANGED, error.message) from None
        records = {record.evidence_id: record for record in case.evidence}
        try:
            return build_research_pack(profile, request.kind, request.context, records, outputs)
        except ResearchInputChanged as error:
            raise _fail(ErrorType.RESEARCH_INPUT_CHANGED, str(error)) from None

    def _finish(
        self, request: ContextPackRequest, pack: ContextPack, profile: Profile, evidence: list[EvidenceEntry]
    ) -> ContextPackResult:
        """Check the rendered request's size and return the pack with its sha256."""
        instructions = build_instructions(profile, request.kind, request.context.expects_patch)
        size = len(instructions.encode("utf-8")) + len(render_pack(pack).encode("utf-8"))
        # A file too large to be read at all counts with its full size: the request could never fit.
        size += sum(
            e.size_bytes or 0
            for e in evidence
            if e.content is None and (e.size_bytes or 0) > MAX_REQUEST_BYTES
        )
        if size > MAX_REQUEST_BYTES:
            raise _fail(ErrorType.REQUEST_TOO_LARGE, _too_large(size, evidence))
        log = run_logger(request.job_id, activity="build_context_pack")
        hits = self._scanner.scan(render_pack(pack))
        if hits:
            log.warning("secret_in_context", hits=[hit.describe() for hit in hits])
            raise failure(
                f"the context pack holds what looks like credential material ({summary(hits)}; lines "
                "of the job's pack as it was built); nothing was sent to a model. Remove it from the "
                "work item or its evidence and create the run again",
                None,
                error_type=ErrorType.SECRET_IN_CONTEXT,
                expected=True,  # logged above in one line, without a traceback
            )
        digest = canonical_sha256(pack.model_dump(mode="json"))
        log.info(
            "context_pack_built",
            pack_sha256=digest,
            request_bytes=size,
            evidence=len(pack.evidence) + len(pack.interpretive),
            files=sum(1 for entry in pack.evidence if entry.content is not None),
        )
        return ContextPackResult(pack=pack, sha256=digest, request_bytes=size)

    def _repository_tree(self, request: ContextPackRequest) -> Path | None:
        """The allow-listed working tree of the run's repository, when the contract froze a commit."""
        if request.repo_alias is None or request.base_commit is None:
            return None
        try:
            record = self._store.get().get_repository(request.repo_alias)
        except OperatorError:
            return None
        return Path(record.path)

    @staticmethod
    def _evidence(ref: str, tree: Path | None, commit: str | None) -> EvidenceEntry:
        if not ref.startswith(FILE_REF):
            return EvidenceEntry(ref=ref, note="reference only: its content is not available to this job")
        if tree is None or commit is None:
            return EvidenceEntry(ref=ref, note="not read: the run names no allow-listed repository")
        path = ref[len(FILE_REF) :]
        try:
            size = git.blob_size(tree, commit, path)
        except OperatorError as error:
            return EvidenceEntry(ref=ref, note=f"not read: {error.message}")
        if size is None:
            return EvidenceEntry(ref=ref, note=f"not read: no such file at {commit[:12]}")
        if size > MAX_REQUEST_BYTES:
            # Reading it would only prove it cannot fit: its size alone fails the job (see below).
            return EvidenceEntry(ref=ref, size_bytes=size, note="not read: larger than a whole request")
        data = git.read_blob(tree, commit, path)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return EvidenceEntry(ref=ref, size_bytes=size, note=f"not text (not UTF-8): {size} bytes")
        return EvidenceEntry(ref=ref, content=text, size_bytes=size)


def _too_large(size: int, evidence: list[EvidenceEntry]) -> str:
    files = sorted(
        (entry for entry in evidence if entry.size_bytes is not None),
        key=lambda entry: entry.size_bytes or 0,
        reverse=True,
    )
    largest = ", ".join(f"{entry.ref} ({entry.size_bytes} bytes)" for entry in files[:5])
    return (
        f"the model request would be {size} bytes; the limit is {MAX_REQUEST_BYTES}"
        + (f". Largest evidence: {largest}" if largest else "")
        + ". Narrow the work item: name fewer or smaller evidence files."
    )
