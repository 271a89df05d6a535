"""Encrypted history on a real dev server (docs/architecture.md "Encrypted history"): clients and a
real worker connected with ``SPECIALISTS_CODEC_KEYS_FILE`` (through ``runtime.temporal.connect``, as
the deployment connects) run real specialist runs; a client without the codec, reading the histories
as the server stores them, finds no model output, diff or evidence text in them; a run started under
one key finishes after a rotation; a run recorded before encryption still finishes with it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from google.protobuf.message import Message
from temporalio.api.common.v1 import Payload
from temporalio.client import Client

from contracts.enums import Tier
from contracts.runs import DecisionOutcome, RunStatus
from infra.devserver import DevServer
from runtime.codec import EncryptionCodec
from runtime.settings import Settings
from runtime.temporal import connect
from tests.codec_keys import keys_document, write_keys_file
from tests.workflows.harness import SLOW_QUERY, bench, example, recorded_response, within
from tests.workflows.test_execution import GOOD_PATCH, approved, executed, execution_bench
from worker import build_worker

ANALYST, REVIEWER = "database-optimizer", "backend-architect"


async def codec_client(server: DevServer, keys_file: Path) -> Client:
    """A client as the deployment connects with ``SPECIALISTS_CODEC_KEYS_FILE=keys_file``."""
    settings = Settings.from_env(
        {"SPECIALISTS_TEMPORAL_ADDRESS": server.address, "SPECIALISTS_CODEC_KEYS_FILE": str(keys_file)}
    )
    client = await connect(settings)
    assert isinstance(client.data_converter.payload_codec, EncryptionCodec)
    return client


def payloads_in(message: Message, path: str = "") -> Iterator[tuple[str, Payload]]:
    """Every ``Payload`` anywhere inside ``message`` (search attributes, memo, inputs, results,
    failures, user metadata...) with its field path (``a.b[key].c``)."""
    if isinstance(message, Payload):
        yield path, message
        return
    for field, value in message.ListFields():
        if field.type != field.TYPE_MESSAGE or field.message_type is None:
            continue
        if field.message_type.GetOptions().map_entry:
            items = [(f"{field.name}[{key}]", item) for key, item in value.items()]
        elif isinstance(value, Message):
            items = [(field.name, value)]
        else:  # a repeated field
            items = [(f"{field.name}[{index}]", item) for index, item in enumerate(value)]
        for name, item in items:
            if isinstance(item, Message):
                yield from payloads_in(item, f"{path}.{name}" if path else name)


PLAIN_BY_DESIGN = (
    # Search attributes: the server indexes them (status, tier, profile names, repository alias).
    "search_attributes",
    # A local activity's marker data, written by the SDK's core: activity type, attempt and times
    # (its result is a separate, encrypted marker detail).
    "marker_recorded_event_attributes.details[data]",
    # A patch marker's data, written by the SDK's core: the patch id (workflow.patched).
    "marker_recorded_event_attributes.details[patch-data]",
)


@dataclass
class Stored:
    """One workflow's history as the server stores it."""

    events: bytes
    """Every event, serialized."""
    payloads: list[tuple[str, Payload]]
    """Every payload in them, with its field path."""


async def stored_histories(plain_client: Client, workflow_id: str) -> dict[str, Stored]:
    """The history of ``workflow_id`` and of every child it started (recursively), as the server
    stores them, fetched by ``plain_client``, which holds no codec."""
    assert plain_client.data_converter.payload_codec is None
    histories: dict[str, Stored] = {}
    pending = [workflow_id]
    while pending:
        current = pending.pop()
        history = await plain_client.get_workflow_handle(current).fetch_history()
        histories[current] = Stored(
            events=b"".join(event.SerializeToString() for event in history.events),
            payloads=[found for event in history.events for found in payloads_in(event)],
        )
        for event in history.events:
            if event.HasField("start_child_workflow_execution_initiated_event_attributes"):
                pending.append(event.start_child_workflow_execution_initiated_event_attributes.workflow_id)
    return histories


def secret_texts() -> list[str]:
    """Text the run handles that must not be readable in history: the model's findings and next
    actions, the reviewer's, the work item's description and evidence references, the diff."""
    item = example(SLOW_QUERY)
    analysis = recorded_response("analysis", ANALYST, item.title)
    review = recorded_response("review", REVIEWER, item.title)
    texts = [item.description[:60], *item.evidence_refs, item.title]
    for output in (analysis, review):
        texts += [output["recommended_next_action"], output["axis"], *output["gaps"]]
        texts += [finding["detail"] for finding in output["findings"]]
        texts += [finding["title"] for finding in output["findings"]]
    texts += [line[1:] for line in GOOD_PATCH.splitlines() if line.startswith("+") and len(line) > 10]
    texts += ["CREATE INDEX CONCURRENTLY", "db/indexes.sql"]
    return texts


@within(90)
async def test_a_worktree_run_with_the_codec_leaves_no_model_output_diff_or_evidence_text_in_history(
    temporal_dev_server: DevServer, temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    keys_file = write_keys_file(tmp_path / "codec-keys.json", keys_document("key-1"))
    client = await codec_client(temporal_dev_server, keys_file)
    async with (
        execution_bench(client, task_queue, tmp_path, GOOD_PATCH) as (b, _tree, _provider),
        b.worker(),
    ):
        run = await approved(b)
        view = await executed(b, run.run_id)
        assert view.status is RunStatus.AWAITING_DECISION, view.error
        # The run worked with the plaintext: its view (decoded by the codec client) has it all.
        assert view.execution is not None and view.execution.evidence is not None
        assert "CREATE INDEX CONCURRENTLY" in (view.execution.evidence.diff or "")
        assert view.result is not None and view.review is not None
        await b.decide(run.run_id, DecisionOutcome.ACCEPTED, "index added")
        final = await b.terminal(run.run_id)
        assert final.status is RunStatus.ACCEPTED

    histories = await stored_histories(temporal_client, run.run_id)
    assert len(histories) >= 3  # the run and its model jobs
    stored = b"".join(history.events for history in histories.values())
    leaked = [text for text in secret_texts() if text.encode() in stored]
    assert leaked == []

    # Every payload is encrypted, except those the server or the SDK's core must read.
    payloads = [found for history in histories.values() for found in history.payloads]
    plain = [(path, p) for path, p in payloads if p.metadata.get("encoding") != b"binary/encrypted"]
    assert len(payloads) - len(plain) >= 20
    assert [path for path, _ in plain if not any(part in path for part in PLAIN_BY_DESIGN)] == []

    # The same payloads, decoded with the deployment's codec, do hold the texts: the check above
    # looked where they are.
    codec = client.data_converter.payload_codec
    assert codec is not None
    decoded = b"".join(p.SerializeToString() for p in await codec.decode([p for _, p in payloads]))
    assert [text for text in secret_texts() if text.encode() not in decoded] == []


@within(60)
async def test_a_run_started_under_key_1_finishes_after_the_worker_and_client_rotate_to_key_2(
    temporal_dev_server: DevServer, task_queue: str, tmp_path: Path
) -> None:
    before = write_keys_file(tmp_path / "keys-before.json", keys_document("key-1"))
    after = write_keys_file(tmp_path / "keys-after.json", keys_document("key-2", "key-1", "key-2"))
    first = await codec_client(temporal_dev_server, before)
    async with bench(first, task_queue, tmp_path) as b:
        async with b.worker():
            view = await b.create(SLOW_QUERY, tier=Tier.READ_ONLY)
            assert view.status is RunStatus.READY
        # The worker stopped with the run waiting; worker and client come back with key 2 current.
        rotated = await codec_client(temporal_dev_server, after)
        b.client = rotated
        async with build_worker(rotated, task_queue=task_queue, config=b.config, providers=b.providers):
            await b.enqueue(view.run_id)
            view = await b.wait(view.run_id, RunStatus.AWAITING_DECISION)
            assert view.result is not None and view.result.role == ANALYST
            await b.decide(view.run_id, DecisionOutcome.ACCEPTED, "after rotation")
            final = await b.terminal(view.run_id)
        assert final.status is RunStatus.ACCEPTED

    key_ids = set()
    history = await first.get_workflow_handle(view.run_id).fetch_history()
    for event in history.events:
        for _, payload in payloads_in(event):
            if payload.metadata.get("encoding") == b"binary/encrypted":
                key_ids.add(payload.metadata["encryption-key-id"])
    assert key_ids == {b"key-1", b"key-2"}, "the history holds payloads under both keys"

    # A client that still holds key 1 only cannot read what key 2 wrote, and says which key it lacks.
    from runtime.codec import CodecError

    try:
        await first.get_workflow_handle(view.run_id).result()
    except CodecError as error:
        assert error.code == "codec_key_unknown" and "'key-2'" in error.message
    else:
        raise AssertionError("a client without key 2 decoded a key-2 payload")


@within(60)
async def test_a_run_recorded_before_encryption_finishes_once_the_worker_encrypts(
    temporal_dev_server: DevServer, temporal_client: Client, task_queue: str, tmp_path: Path
) -> None:
    keys_file = write_keys_file(tmp_path / "codec-keys.json", keys_document("key-1"))
    async with bench(temporal_client, task_queue, tmp_path) as b:
        async with b.worker():
            view = await b.create(SLOW_QUERY, tier=Tier.READ_ONLY)
            assert view.status is RunStatus.READY
        encrypting = await codec_client(temporal_dev_server, keys_file)
        b.client = encrypting
        async with build_worker(encrypting, task_queue=task_queue, config=b.config, providers=b.providers):
            await b.enqueue(view.run_id)
            view = await b.wait(view.run_id, RunStatus.AWAITING_DECISION)
            await b.decide(view.run_id, DecisionOutcome.ACCEPTED, "after encryption was turned on")
            final = await b.terminal(view.run_id)
        assert final.status is RunStatus.ACCEPTED
