"""Activities of the goal queue's beyond-source pass (docs/architecture.md "Intake";
``contracts/intake_beyond.py`` holds the pure rules).

``prepare_beyond_scan`` snapshots the model selection (as a run's capture does), reads the catalog's
sha256, lists the documents the pass reads (those of :data:`DOC_CANDIDATES` tracked at the commit) and
summarises recent history with one bounded ``git log`` (at most :data:`MAX_HISTORY_COMMITS` + 1
subjects, first parent). ``check_beyond_quotes`` reads each quoted file at the scanned commit with the
hardened git runner and keeps only proposals whose every quote matches.
"""

from __future__ import annotations

from pathlib import Path

from temporalio import activity

from activities.config import ActivityConfig
from activities.errors import refusal
from activities.store_access import SharedStore
from catalog.loader import load_catalog
from contracts.enums import FallbackMode
from contracts.errors import OperatorError, Refused
from contracts.intake_beyond import (
    DOC_CANDIDATES,
    MAX_HISTORY_COMMITS,
    BeyondPrepared,
    BeyondPrepareRequest,
    QuoteCheckRequest,
    QuoteCheckResult,
    drop,
    history_summary,
    quote_problem,
)
from contracts.output import MAX_REQUEST_BYTES
from contracts.runs import ModelSnapshot
from contracts.temporal_names import ActivityName
from runtime import git_repository as git
from runtime.git import Git
from store.repositories import require_active


def recent_history(tree: Path, commit: str) -> tuple[str, int]:
    """The bounded history summary of ``commit`` (``contracts.intake_beyond.history_summary``)."""
    raw = Git(tree).ok(
        "log", "--first-parent", f"--max-count={MAX_HISTORY_COMMITS + 1}", "--format=%h%x00%s%x00", commit
    )
    fields = raw.decode("utf-8", "replace").split("\x00")
    subjects = [(fields[i].strip(), fields[i + 1]) for i in range(0, len(fields) - 1, 2) if fields[i].strip()]
    return history_summary(subjects)


def file_lines(tree: Path, commit: str, path: str) -> list[str] | None:
    """The lines of the text file ``path`` at ``commit``; ``None`` when it is not a (UTF-8) file
    there, or is larger than a whole model request (a quote from it cannot have been seen)."""
    try:
        size = git.blob_size(tree, commit, path)
    except OperatorError:
        return None
    if size is None or size > MAX_REQUEST_BYTES:
        return None
    try:
        return git.read_blob(tree, commit, path).decode("utf-8").splitlines()
    except (OperatorError, UnicodeDecodeError):
        return None


class BeyondActivities:
    """``prepare_beyond_scan`` and ``check_beyond_quotes``, on the repository registered in the store."""

    def __init__(self, config: ActivityConfig, store: SharedStore) -> None:
        self._config = config
        self._store = store

    def _tree(self, alias: str) -> Path:
        return Path(require_active(self._store.get().get_repository(alias)).path)

    @activity.defn(name=ActivityName.PREPARE_BEYOND_SCAN)
    def prepare_beyond_scan(self, request: BeyondPrepareRequest) -> BeyondPrepared:
        """Snapshot the selection and gather the pass's inputs. Raises non-retryable
        ``no_model_selected``, ``unknown_repository``, ``repository_deactivated`` …"""
        try:
            store = self._store.get()
            tree = self._tree(request.repo_alias)
            selection = store.get_model_selection()
            if selection is None:
                raise Refused(
                    "no_model_selected",
                    "the beyond-source pass calls a model: select one first (specialists models select)",
                )
            chain: list[str | None] = [selection.selection.primary]
            if selection.selection.fallback_mode is FallbackMode.ORDERED:
                chain += list(selection.selection.fallbacks)
            store.require_usable_models(chain)
            catalog = load_catalog(self._config.catalog_path)
            docs = [path for path in DOC_CANDIDATES if git.blob_size(tree, request.commit, path) is not None]
            history, commits = recent_history(tree, request.commit)
        except OperatorError as error:
            raise refusal(error) from None
        return BeyondPrepared(
            model=ModelSnapshot.from_selection(selection),
            catalog_sha256=catalog.sha256,
            evidence_refs=[f"file:{path}" for path in docs],
            history=history,
            history_commits=commits,
        )

    @activity.defn(name=ActivityName.CHECK_BEYOND_QUOTES)
    def check_beyond_quotes(self, request: QuoteCheckRequest) -> QuoteCheckResult:
        """Check every quote of every proposal against the repository at ``request.commit``: a
        proposal with no quote or any mismatching one is dropped, with the reason."""
        try:
            tree = self._tree(request.repo_alias)
        except OperatorError as error:
            raise refusal(error) from None
        files: dict[str, list[str] | None] = {}
        kept: list[int] = []
        dropped = []
        for index, finding in enumerate(request.findings):
            if not finding.quotes:
                dropped.append(drop(finding, "the proposal cites no quote"))
                continue
            failed = None
            for quote in finding.quotes:
                if quote.path not in files:
                    files[quote.path] = file_lines(tree, request.commit, quote.path)
                problem = quote_problem(quote, files[quote.path])
                if problem is not None:
                    failed = drop(finding, f"quote does not match: {problem}", quote)
                    break
            if failed is None:
                kept.append(index)
            else:
                dropped.append(failed)
        return QuoteCheckResult(kept=kept, dropped=dropped)
