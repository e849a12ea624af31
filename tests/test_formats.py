"""Durable formats carry a version: what earlier releases wrote is read as before, and what a
later release wrote in a newer format is refused, naming where it is, never misread.

tests/fixtures/formats/v0 holds files written before formats carried a version (their bytes
must never be rewritten by a newer release)."""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
import time
from pathlib import Path

import pyarrow as pa
import pytest
from pyarrow import fs

from kafka_share_eos import formats
from kafka_share_eos.errors import KafkaShareEosError, UnsupportedFormatError
from kafka_share_eos.journal import Journal
from kafka_share_eos.journal.leases import RUNNER, Leases
from kafka_share_eos.journal.metrics import BatchMetrics
from kafka_share_eos.journal.metrics_store import MetricsStore, entry_name
from kafka_share_eos.journal.schema import JOURNAL_SCHEMA
from kafka_share_eos.journal.segments import segment_name
from kafka_share_eos.ledger import RECORD_IDENTITY, IdentityLedger
from kafka_share_eos.sinks.kafka_progress import Marker
from kafka_share_eos.twophase import Decision, FileDecisionLog, Outcome, Token
from kafka_share_eos.twophase.delta_staging import StagingArea

V0 = Path(__file__).parent / "fixtures" / "formats" / "v0"
TXID = "kse:app-a:5:0f0f"
NEWER = formats.UNVERSIONED + 1
STAMP = dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
METRICS = BatchMetrics(
    seq=3, first_seq=2, records=2, redelivered=1, acknowledged=2, ack_failures=0,
    ack_failed_partitions=0, lock_held_ms=12.5, lock_budget_used=0.04,
    ack_policy="afterCommit", planned_at="2024-01-02T03:04:05+00:00",
    settled_at="2024-01-02T03:04:06+00:00",
    consumers=[{"member": "123-abc", "records": 2, "slot": 0}],
)
DECISION = Decision(TXID, 5, Outcome.COMMIT, (
    Token("delta", TXID, 2, {"files": ["part-1.parquet"]}, part="0"),
))
MANIFEST = {
    "participant": "delta", "app_id": "app-a", "version": 3, "snapshot": 2, "keys": ["id"],
    "files": ["part-00000-x-kse.c000.snappy.parquet"],
    "actions": [{"path": "part-00000-x-kse.c000.snappy.parquet", "size": 10,
                 "modification_time": 1, "stats": "{\"numRecords\": 2}"}],
}


def _refusal(where: Path | str) -> str:
    """What the refusal of format NEWER at ``where`` says."""
    return rf"(?s){re.escape(str(where))}.*'{NEWER}'.*reads format 1"


def _bump(path: Path) -> None:
    """Make the JSON file at ``path`` claim the next format version."""
    value = json.loads(path.read_bytes())
    assert value[formats.FIELD] == formats.UNVERSIONED
    path.write_text(json.dumps({**value, formats.FIELD: NEWER}))


def _segment_rows() -> pa.RecordBatch:
    return pa.record_batch([
        pa.array([b"k1", None], pa.binary()), pa.array([b"v1", b"v2"], pa.binary()),
        pa.array(["orders", "orders"], pa.string()), pa.array([0, 1], pa.int32()),
        pa.array([7, 8], pa.int64()), pa.array([STAMP, STAMP], pa.timestamp("us", tz="UTC")),
        pa.array([0, 0], pa.int32()),
        pa.array([[{"key": "h", "value": b"x"}], []], JOURNAL_SCHEMA.field("headers").type),
        pa.array([1, 2], pa.int32()),
    ], schema=JOURNAL_SCHEMA)


def test_the_check_reads_versions_up_to_the_known_one_and_refuses_the_rest() -> None:
    assert formats.check_format("lease", None, 1, "x") == 1
    assert formats.check_format("lease", 1, 2, "x") == 1
    assert formats.check_format("lease", b"2", 2, "x") == 2
    with pytest.raises(UnsupportedFormatError) as refused:
        formats.check_format("lease", 3, 2, "/j/_leases/a.json")
    message = str(refused.value)
    assert "lease at /j/_leases/a.json is in format '3'" in message
    assert "reads format 1 to 2" in message
    assert "upgrade kafka-share-eos to a version that reads format 3" in message
    assert isinstance(refused.value, KafkaShareEosError)
    assert isinstance(refused.value, RuntimeError)
    for garbage in ("x", "0", -1, 1.5):
        with pytest.raises(UnsupportedFormatError, match=r"a newer version|reads format 0"):
            formats.check_format("lease", garbage, 1, "x")


def test_a_journal_segment_of_v0_is_read_and_a_newer_one_refused(tmp_path: Path) -> None:
    journal = Journal(str(tmp_path))
    shutil.copy(V0 / "journal_segment.arrow", tmp_path / segment_name(3))
    assert journal.read(3).equals(pa.Table.from_batches([_segment_rows()]))

    journal.write(4, _segment_rows())
    path = tmp_path / segment_name(4)
    with pa.ipc.open_file(pa.OSFile(str(path))) as reader:
        written = reader.read_all()
    assert written.schema.metadata == {formats.SCHEMA_KEY: b"1"}
    newer = written.replace_schema_metadata({formats.SCHEMA_KEY: str(NEWER).encode()})
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, newer.schema) as writer:
        writer.write_table(newer)
    with pytest.raises(UnsupportedFormatError, match=_refusal(path)):
        journal.read(4)


def test_a_lease_of_v0_is_weighed_and_a_newer_one_refused(tmp_path: Path) -> None:
    (tmp_path / "_leases").mkdir()
    shutil.copy(V0 / "lease.json", tmp_path / "_leases" / "123-abc.json")
    until = json.loads((V0 / "lease.json").read_text())["until"]
    hold_ms = int((time.time() - until + 3600) * 1000)
    assert Leases(str(tmp_path)).locks_of_other_runs_expire_at("run-b", hold_ms) == pytest.approx(
        until + hold_ms / 1000)

    lease = Leases(str(tmp_path)).lease(RUNNER)
    lease.renew("run-b", 1.0)
    path = tmp_path / "_leases" / f"{lease.member}.json"
    _bump(path)
    with pytest.raises(UnsupportedFormatError, match=_refusal(path)):
        Leases(str(tmp_path)).locks_of_other_runs_expire_at("run-c", 1000)


def test_batch_metrics_of_v0_are_read_and_newer_ones_refused(tmp_path: Path) -> None:
    (tmp_path / "_metrics").mkdir()
    shutil.copy(V0 / "batch_metrics.json", tmp_path / "_metrics" / entry_name(3))
    store = MetricsStore(str(tmp_path))
    assert store.read(3) == METRICS

    store.write(METRICS)
    path = tmp_path / "_metrics" / entry_name(3)
    _bump(path)
    with pytest.raises(UnsupportedFormatError, match=_refusal(path)):
        store.read(3)


def test_a_decision_of_v0_is_read_and_a_newer_one_refused(tmp_path: Path) -> None:
    shutil.copy(V0 / "decision.json", tmp_path / "kse=app-a=5=0f0f.json")
    log = FileDecisionLog(str(tmp_path))
    assert log.read(TXID) == DECISION

    log.delete(TXID)
    log.write(DECISION)
    path = tmp_path / "kse=app-a=5=0f0f.json"
    _bump(path)
    with pytest.raises(UnsupportedFormatError, match=_refusal(path)):
        log.read(TXID)


def test_a_staging_manifest_of_v0_is_read_and_a_newer_one_refused(tmp_path: Path) -> None:
    (tmp_path / "_kse_2pc").mkdir()
    path = tmp_path / "_kse_2pc" / "kse=app-a=5=0f0f.json"
    shutil.copy(V0 / "staging_manifest.json", path)
    staging = StagingArea(fs.LocalFileSystem(), str(tmp_path))
    assert staging.read(TXID) == MANIFEST

    staging.write(TXID, dict(MANIFEST))
    assert staging.read(TXID) == MANIFEST
    _bump(path)
    with pytest.raises(UnsupportedFormatError, match=_refusal(path)):
        staging.read(TXID)


def test_a_ledger_of_v0_is_read_and_claimed_in_and_a_newer_one_refused(tmp_path: Path) -> None:
    shutil.copytree(V0 / "ledger", tmp_path / "old")
    ledger = IdentityLedger.existing(str(tmp_path / "old"), app_id="app-a")
    assert ledger.identity == RECORD_IDENTITY
    assert ledger.last_batch() == 5
    claimed = ledger.read(RECORD_IDENTITY)
    assert claimed is not None and claimed.to_pylist() == [
        {"topic": "orders", "partition": 0, "offset": 7}]
    batch = pa.Table.from_batches([_segment_rows()]).select(list(RECORD_IDENTITY))
    assert ledger.claim(batch, 6).rows["offset"].to_pylist() == [8]

    new = IdentityLedger(str(tmp_path / "new"), app_id="app-a")
    new.claim(batch, 0)
    table = new.location.table()
    assert table is not None
    assert table.metadata().configuration[formats.TABLE_PROPERTY] == "1"
    table.alter.set_table_properties({formats.TABLE_PROPERTY: str(NEWER)},
                                     raise_if_not_exists=False)
    with pytest.raises(UnsupportedFormatError, match=_refusal(tmp_path / "new")):
        IdentityLedger(str(tmp_path / "new"), app_id="app-a").last_batch()
    with pytest.raises(UnsupportedFormatError, match=_refusal(tmp_path / "new")):
        IdentityLedger.existing(str(tmp_path / "new"))


def test_a_progress_marker_of_v0_is_read_and_a_newer_one_refused() -> None:
    marker = Marker.from_bytes((V0 / "progress_marker.bin").read_bytes(), "topic 'p'")
    assert (marker.batch_id, marker.records) == (5, 2)
    assert marker == Marker.of({("orders", 0): [7], ("orders", 1): [8]}, 5, None)
    assert marker.committed.ranges == {("orders", 0): [[7, 7]], ("orders", 1): [[8, 8]]}

    written = json.loads(marker.to_bytes("app-a"))
    assert written[formats.FIELD] == formats.PROGRESS_MARKER
    newer = json.dumps({**written, formats.FIELD: NEWER}).encode()
    with pytest.raises(UnsupportedFormatError, match=_refusal("topic 'p' partition 0 offset 9")):
        Marker.from_bytes(newer, "topic 'p' partition 0 offset 9")
