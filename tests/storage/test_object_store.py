"""Object stores through obstore: the journal's files, first-writer-wins creates, and the check
that refuses a store ignoring conditional writes (an in-memory store: the fast tier; the S3 and
Azure servers of tests/proving_ground/launchers/test_object_stores.py run the same calls on
real servers; fake-gcs-server, which takes no write of obstore's, shows what a store refusing
the check's create leads to)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import obstore
import pyarrow as pa
import pytest
from obstore.exceptions import GenericError

from kafka_share_eos.errors import ObjectStoreError, SourceOptionError
from kafka_share_eos.journal import Journal
from kafka_share_eos.journal.schema import JOURNAL_SCHEMA
from kafka_share_eos.proving_ground.launchers.azurite import AzuriteServer
from kafka_share_eos.proving_ground.launchers.gcs_server import GcsServer
from kafka_share_eos.proving_ground.launchers.s3_server import S3Server
from kafka_share_eos.source.options import SourceOptions
from kafka_share_eos.storage import (
    Location,
    open_location,
    supports_write_if_absent,
    write_atomically,
    write_if_absent,
)
from kafka_share_eos.storage import object_store as object_store_module
from kafka_share_eos.twophase.file_log import FileDecisionLog
from kafka_share_eos.twophase.protocol import Decision, Outcome


def _memory() -> str:
    return f"memory:///bucket/{uuid.uuid4().hex}"


def _batch(offsets: list[int]) -> pa.RecordBatch:
    rows = [{"topic": "t", "partition": 0, "offset": o, "deliveryCount": 1} for o in offsets]
    return pa.RecordBatch.from_pylist(rows, schema=JOURNAL_SCHEMA)


def test_a_journal_on_an_object_store_keeps_whole_segments_and_first_writers() -> None:
    journal = Journal(_memory())
    journal.write(1, _batch([0, 1]))
    assert journal.write_slot(2, 0, _batch([2]), last=False)
    assert not journal.write_slot(2, 0, _batch([99]), last=False)  # the first writer's stays
    assert journal.write_slot(2, 0, _batch([3]), part=1)

    assert journal.entries() == [(1, None), (2, 0)]
    assert journal.read(1).column("offset").to_pylist() == [0, 1]
    assert journal.read(2, 0).column("offset").to_pylist() == [2, 3]
    assert journal.purge(1) == [1]
    assert journal.sequences() == [2]


def test_files_appear_whole_and_only_their_first_writer_creates_them() -> None:
    fs, root = open_location(_memory(), create=True)
    write_atomically(fs, f"{root}/a.json", b"one")
    write_atomically(fs, f"{root}/a.json", b"two")
    assert write_if_absent(fs, f"{root}/b.json", b"first")
    assert not write_if_absent(fs, f"{root}/b.json", b"second")

    with fs.open_input_stream(f"{root}/a.json") as source:
        assert source.read() == b"two"
    with fs.open_input_stream(f"{root}/b.json") as source:
        assert source.read() == b"first"


def test_a_store_that_ignores_conditional_writes_is_refused_before_any_write(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    put = object_store_module.obstore.put

    def unconditional(store: Any, path: str, payload: Any, **kwargs: Any) -> Any:
        kwargs.pop("mode", None)
        return put(store, path, payload, **kwargs)

    monkeypatch.setattr(object_store_module.obstore, "put", unconditional)
    location = _memory()

    with pytest.raises(ObjectStoreError, match="does not refuse a second create") as refused:
        Journal(location).write(1, _batch([0]))
    assert location in str(refused.value)


def test_consumers_above_one_take_an_object_store_journal_but_not_another_store() -> None:
    assert all(map(supports_write_if_absent, ["s3://b/j", "abfss://c@a.dfs.core.windows.net/j",
                                              "az://c/j", "gs://b/j", "/local/j"]))
    base = {"kafka.bootstrap.servers": "b:9092", "kafka.share.group.id": "g",
            "subscribe": "t", "consumers": "2"}

    assert SourceOptions.parse({**base, "journalPath": "s3://bucket/j"}).consumers == 2
    with pytest.raises(SourceOptionError, match=r"'consumers'.*hdfs://nn/j"):
        SourceOptions.parse({**base, "journalPath": "hdfs://nn/j"})


@pytest.fixture(scope="module", params=["s3", "azure"])
def store(request: pytest.FixtureRequest) -> Iterator[S3Server | AzuriteServer]:
    server = S3Server() if request.param == "s3" else AzuriteServer()
    with server:
        yield server


def test_racing_writers_of_a_journal_part_on_a_real_store_leave_one_whole_winner(
    store: S3Server | AzuriteServer,
) -> None:
    """Two consumers journaling the same slot part (a retried task and the original) race on
    every one of 20 parts: each part has one winner, and every reader sees the winner's rows."""
    where = Location(store.url(f"race-{uuid.uuid4().hex}"), store.storage_options())
    journal = Journal(where)

    def write(writer: int, seq: int) -> bool:
        return Journal(where).write_slot(seq, 0, _batch([seq * 100 + writer]))

    with ThreadPoolExecutor(max_workers=2) as pool:
        won = [list(pool.map(write, (1, 2), (seq, seq))) for seq in range(20)]

    assert all(sorted(pair) == [False, True] for pair in won)
    for seq, pair in enumerate(won):
        winner = 1 if pair[0] else 2
        assert journal.read(seq, 0).column("offset").to_pylist() == [seq * 100 + winner]
    assert journal.entries() == [(seq, 0) for seq in range(20)]


def test_two_phase_decisions_on_a_real_store_keep_the_first(
    store: S3Server | AzuriteServer,
) -> None:
    log = FileDecisionLog(store.url(f"decisions-{uuid.uuid4().hex}"), store.storage_options())
    commit = Decision("kse:app:7:0", 7, Outcome.COMMIT, ())
    abort = Decision.abort("kse:app:7:0")

    assert log.first_writer_wins
    assert log.write(commit) == commit
    assert log.write(abort) == commit
    assert log.read("kse:app:7:0") == commit


def test_a_journal_whose_store_refuses_the_check_s_create_fails_with_its_reason_writing_nothing(
    gcs_server: GcsServer,
) -> None:
    """fake-gcs-server answers every write of obstore (an XML API ``PUT``) with 400: the
    journal's first write fails with that answer, not with the "not found" of the probe's
    clean-up (GCS answers 404 to a delete of what it does not hold), and leaves nothing."""
    prefix = f"journal-{uuid.uuid4().hex}"
    journal = Journal(Location(gcs_server.url(prefix), gcs_server.storage_options()))

    with pytest.raises(GenericError, match=r"PUT .*400 Bad Request.*invalid uploadType"):
        journal.write(1, _batch([0]))

    assert obstore.list(gcs_server.obstore_store(), prefix).collect() == []
