"""Pure logic of the kafka-share source: options, journal, Arrow rows (no broker, no Spark)."""

from __future__ import annotations

import itertools
import os
import threading
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from kafka_share_eos.source.acks import AckStats
from kafka_share_eos.source.datasource import spark_schema
from kafka_share_eos.source.journal import Journal, JournalError, segment_name
from kafka_share_eos.source.metrics import BatchMetrics, BatchTally
from kafka_share_eos.source.metrics_store import METRICS_DIR, MetricsStore, entry_name
from kafka_share_eos.source.options import (
    DEFAULT_MAX_POLL_RECORDS,
    AckPolicy,
    LockBudgetAction,
    SourceOptionError,
    SourceOptions,
)
from kafka_share_eos.source.pump import JournalPump
from kafka_share_eos.source.schema import (
    JOURNAL_SCHEMA,
    arrow_schema,
    project,
    to_record_batch,
)

REQUIRED = {
    "kafka.bootstrap.servers": "localhost:9092",
    "kafka.share.group.id": "orders-eos",
    "subscribe": "orders, payments",
    "journalPath": "/tmp/journal",
}


def parse(**extra: str) -> SourceOptions:
    return SourceOptions.parse({**REQUIRED, **extra})


def test_defaults_and_client_config() -> None:
    options = parse(**{"kafka.security.protocol": "SASL_SSL", "kafka.sasl.password": "s3cret"})
    assert options.topics == ("orders", "payments")
    assert options.ack_policy is AckPolicy.AFTER_COMMIT
    assert options.max_records_per_trigger is None
    assert options.include_headers is False
    assert options.lock_duration_ms == 30_000
    assert options.lock_budget_warn_fraction == 0.8
    assert options.lock_budget_action is LockBudgetAction.WARN
    assert dict(options.consumer_config) == {
        "bootstrap.servers": "localhost:9092",
        "group.id": "orders-eos",
        "share.acknowledgement.mode": "explicit",
        "max.poll.records": str(DEFAULT_MAX_POLL_RECORDS),
        "security.protocol": "SASL_SSL",
        "sasl.password": "s3cret",
    }


def test_option_names_are_case_insensitive_and_values_parsed() -> None:
    options = parse(
        MAXRECORDSPERTRIGGER="250", pollTimeoutMs="20", acknowledge="AFTERJOURNAL",
        includeHeaders="True", availablenowidlems="700", LOCKDURATIONMS=" 45000",
        lockbudgetwarnfraction="1", LockBudgetAction="SWITCHTOAFTERJOURNAL",
    )
    assert options.lock_duration_ms == 45_000
    assert options.lock_budget_warn_fraction == 1.0
    assert options.lock_budget_action is LockBudgetAction.SWITCH_TO_AFTER_JOURNAL
    assert options.available_now_idle_ms == 700
    assert options.max_records_per_trigger == 250
    assert options.poll_timeout_ms == 20
    assert options.ack_policy is AckPolicy.AFTER_JOURNAL
    assert options.include_headers is True
    assert options.max_poll_records == 250


def test_after_commit_maps_max_records_per_trigger_onto_the_poll_size() -> None:
    assert parse(maxRecordsPerTrigger="1000").max_poll_records == 1000
    assert parse(**{"kafka.max.poll.records": "70"}).max_poll_records == 70
    with pytest.raises(SourceOptionError, match=r"maxRecordsPerTrigger.*kafka\.max\.poll\.records"):
        parse(maxRecordsPerTrigger="100", **{"kafka.max.poll.records": "70"})


def test_after_journal_polls_never_exceed_the_batch_limit() -> None:
    assert parse(acknowledge="afterJournal", maxRecordsPerTrigger="100").max_poll_records == 100
    big = parse(acknowledge="afterJournal", maxRecordsPerTrigger="100000")
    assert big.max_poll_records == DEFAULT_MAX_POLL_RECORDS


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        ({"startingOffsets": "earliest"}, "startingOffsets"),
        ({"endingOffsets": "latest"}, "endingOffsets"),
        ({"assign": "{}"}, "assign"),
        ({"subscribePattern": "o.*"}, "subscribePattern"),
        ({"failOnDataLoss": "false"}, "failOnDataLoss"),
        ({"kafka.group.id": "g"}, "kafka.share.group.id"),
        ({"kafka.enable.auto.commit": "true"}, "kafka.enable.auto.commit"),
        ({"kafka.share.acknowledgement.mode": "implicit"}, "kafka.share.acknowledgement.mode"),
        ({"maxOffsetsPerTrigger": "5"}, "maxRecordsPerTrigger"),
        ({"maxRecordsPerTrigger": "0"}, "maxRecordsPerTrigger"),
        ({"maxRecordsPerTrigger": "lots"}, "maxRecordsPerTrigger"),
        ({"pollTimeoutMs": "-5"}, "pollTimeoutMs"),
        ({"availableNowIdleMs": "0"}, "availableNowIdleMs"),
        ({"acknowledge": "never"}, "acknowledge"),
        ({"includeHeaders": "yes"}, "includeHeaders"),
        ({"lockDurationMs": "0"}, "lockDurationMs"),
        ({"lockDurationMs": "30s"}, "lockDurationMs"),
        ({"lockBudgetWarnFraction": "0"}, "lockBudgetWarnFraction"),
        ({"lockBudgetWarnFraction": "1.5"}, "lockBudgetWarnFraction"),
        ({"lockBudgetWarnFraction": "-0.2"}, "lockBudgetWarnFraction"),
        ({"lockBudgetWarnFraction": "nan"}, "lockBudgetWarnFraction"),
        ({"lockBudgetWarnFraction": "80%"}, "lockBudgetWarnFraction"),
        ({"lockBudgetAction": "fail"}, "lockBudgetAction"),
        ({"subscribe": " , "}, "subscribe"),
        ({"subscribe": "a,a"}, "subscribe"),
        ({"journalPath": ""}, "journalPath"),
        ({"colour": "blue"}, "colour"),
    ],
)
def test_bad_options_are_named(extra: dict[str, str], named: str) -> None:
    with pytest.raises(SourceOptionError, match=named):
        parse(**extra)


@pytest.mark.parametrize("missing", sorted(REQUIRED))
def test_missing_required_options_are_named(missing: str) -> None:
    given = {k: v for k, v in REQUIRED.items() if k != missing}
    with pytest.raises(SourceOptionError, match=missing):
        SourceOptions.parse(given)


class FakeMessage:
    """The accessors of ``confluent_kafka.Message`` that the conversion reads."""

    def __init__(self, offset: int, **fields: Any) -> None:
        self._offset = offset
        self._fields = fields

    def key(self) -> Any:
        return self._fields.get("key")

    def value(self) -> Any:
        return self._fields.get("value")

    def topic(self) -> str:
        return "orders"

    def partition(self) -> int:
        return 3

    def offset(self) -> int:
        return self._offset

    def timestamp(self) -> tuple[int, int]:
        return self._fields.get("timestamp", (1, 1_700_000_000_123))

    def headers(self) -> Any:
        return self._fields.get("headers")

    def delivery_count(self) -> int:
        return self._fields.get("delivery_count", 1)


def messages() -> list[FakeMessage]:
    return [
        FakeMessage(0, key=b"k", value=b"v", headers=[("h", b"1"), ("h", None)]),
        FakeMessage(1, key=None, value=b"", timestamp=(0, -1), delivery_count=3),
        FakeMessage(2, key=b"", value=None, timestamp=(2, 5)),
        FakeMessage(3, key=b"big", value=b"x" * 1_000_000),
    ]


def test_record_batch_keeps_malformed_input_unchanged() -> None:
    rows = to_record_batch(messages()).to_pylist()
    assert [(r["key"], r["value"]) for r in rows] == [
        (b"k", b"v"), (None, b""), (b"", None), (b"big", b"x" * 1_000_000),
    ]
    assert [r["offset"] for r in rows] == [0, 1, 2, 3]
    assert {r["topic"] for r in rows} == {"orders"} and {r["partition"] for r in rows} == {3}
    assert [r["timestampType"] for r in rows] == [0, None, 1, 0]
    assert rows[0]["timestamp"].timestamp() == pytest.approx(1_700_000_000.123)
    assert rows[1]["timestamp"] is None
    assert rows[0]["headers"] == [{"key": "h", "value": b"1"}, {"key": "h", "value": None}]
    assert rows[1]["headers"] is None
    assert [r["deliveryCount"] for r in rows] == [1, 3, 1, 1]


@pytest.mark.parametrize("include_headers", [True, False])
def test_arrow_schema_is_what_spark_expects(include_headers: bool) -> None:
    from pyspark.sql.pandas.types import to_arrow_schema

    expected = to_arrow_schema(spark_schema(include_headers), timezone="UTC")
    assert arrow_schema(include_headers).equals(expected)
    projected = project(pa.Table.from_batches([to_record_batch(messages())]), include_headers)
    assert projected.schema.equals(expected)


def test_journal_round_trip_and_listing(tmp_path: Path) -> None:
    journal = Journal(str(tmp_path / "j"))
    batch = to_record_batch(messages())
    for seq in (3, 1, 2):
        journal.write(seq, batch)
    assert journal.sequences() == [1, 2, 3]
    assert journal.read(2).equals(pa.Table.from_batches([batch]))
    assert journal.read(2).schema.equals(JOURNAL_SCHEMA)


def test_journal_write_is_atomic_and_leaves_no_temp_files(tmp_path: Path) -> None:
    journal = Journal(str(tmp_path))
    journal.write(7, to_record_batch(messages()))
    assert os.listdir(tmp_path) == [segment_name(7)]
    # A writer that died before its rename leaves only a temp file, which is never a segment.
    (tmp_path / ".tmp-deadbeef").write_bytes(b"partial")
    assert journal.sequences() == [7]


def test_journal_purge_deletes_only_committed_segments(tmp_path: Path) -> None:
    journal = Journal(str(tmp_path))
    for seq in range(1, 6):
        journal.write(seq, to_record_batch(messages()))
    assert journal.purge(3) == [1, 2, 3]
    assert journal.sequences() == [4, 5]
    assert journal.purge(3) == []


def test_journal_missing_segment_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(JournalError, match="segment 9"):
        Journal(str(tmp_path)).read(9)


def test_journal_survives_pickling_and_accepts_uris(tmp_path: Path) -> None:
    import pickle

    journal = Journal(f"file://{tmp_path}/uri-journal")
    journal.write(1, to_record_batch(messages()))
    clone = pickle.loads(pickle.dumps(journal))
    assert clone.read(1).num_rows == 4
    assert (tmp_path / "uri-journal" / segment_name(1)).exists()


def batch_metrics(seq: int) -> BatchMetrics:
    return BatchMetrics(
        seq=seq, first_seq=seq, records=10, redelivered=2, acknowledged=10, ack_failures=0,
        ack_failed_partitions=0, lock_held_ms=12.5, lock_budget_used=12.5 / 30_000,
        ack_policy="afterCommit", planned_at="2025-01-01T00:00:00+00:00",
        settled_at="2025-01-01T00:00:01+00:00",
    )


def test_journal_listing_and_purge_ignore_the_metrics_directory(tmp_path: Path) -> None:
    journal = Journal(str(tmp_path))
    store = MetricsStore(str(tmp_path))
    for seq in (1, 2, 3):
        journal.write(seq, to_record_batch(messages()))
        store.write(batch_metrics(seq))
    # A stray segment-like name inside _metrics is not a segment either.
    (tmp_path / METRICS_DIR / segment_name(9)).write_bytes(b"")
    assert journal.sequences() == [1, 2, 3]
    assert journal.purge(3) == [1, 2, 3]
    assert journal.sequences() == []
    assert store.sequences() == [1, 2, 3]
    assert store.read(2) == batch_metrics(2)


@pytest.mark.parametrize("uri", [False, True], ids=["path", "file-uri"])
def test_metrics_store_keeps_only_the_newest_entries(tmp_path: Path, uri: bool) -> None:
    location = f"file://{tmp_path}/j" if uri else str(tmp_path / "j")
    store = MetricsStore(location, keep=3)
    for seq in range(1, 6):
        store.write(batch_metrics(seq))
    assert store.prune() == [1, 2]
    assert sorted(os.listdir(tmp_path / "j" / METRICS_DIR)) == [entry_name(s) for s in (3, 4, 5)]
    assert [m.seq for m in store.read_all()] == [3, 4, 5]
    # A new run lists what an earlier run left before pruning.
    for seq in (6, 7):
        store.write(batch_metrics(seq))
    assert MetricsStore(location, keep=2).prune() == [3, 4, 5]


def test_inspecting_metrics_never_creates_a_journal(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        MetricsStore(str(tmp_path / "absent"), create=False).read_all()
    assert not (tmp_path / "absent").exists()
    Journal(str(tmp_path / "empty")).sequences()
    assert MetricsStore(str(tmp_path / "empty"), create=False).read_all() == []
    assert not (tmp_path / "empty" / METRICS_DIR).exists()


def test_a_cancelled_take_hands_out_nothing_and_the_next_take_gets_it() -> None:
    # The pump's hand-over alone: one record is journaled, then the next poll is still under
    # way, so the batch is not complete and a take waits for it to fill.
    polls = [[FakeMessage(7, key=b"k", value=b"v")]]
    settled, released = threading.Event(), threading.Event()

    def poll(timeout_ms: int) -> list[Any]:
        if polls:
            return polls.pop()
        released.wait(timeout_ms / 1000)
        return []

    def journal(tally: BatchTally, records: list[Any]) -> None:
        tally.polled(1, to_record_batch(records))

    pump = JournalPump(poll, journal, lambda: settled.set() or 0.0, AckStats(), 10, 10_000)
    try:
        assert settled.wait(10)
        assert pump.take(None, 10_000, 10_000, cancelled=lambda: True) is None
        taken = pump.take(None, 10_000, 200)
        assert taken is not None
        assert (taken[0].first_seq, taken[0].seq, taken[0].records) == (1, 1, 1)
    finally:
        released.set()
        pump.stop()


def test_polls_larger_than_a_batch_are_split_at_its_boundaries() -> None:
    """librdkafka's max.poll.records is soft: a poll crossing a batch's end is journaled as
    segments of two batches or more, and each batch counts the ACCEPTs of its own records."""
    polls = [[FakeMessage(n) for n in range(size)] for size in (7, 9, 2)]
    stats, segments = AckStats(), []
    last: list[int] = []

    def poll(timeout_ms: int) -> list[Any]:
        if polls:
            records = polls.pop(0)
            last[:] = [len(records)]
            return records
        time.sleep(timeout_ms / 1000)
        return []

    def journal(tally: BatchTally, records: list[Any]) -> None:
        segments.append(len(records))
        tally.polled(len(segments), to_record_batch(records))

    def settle() -> float:
        stats.accepted += last[0]
        return 1.0

    pump = JournalPump(poll, journal, settle, stats, 4, 100, max_rows=5)
    try:
        batches = []
        while sum(b[0] for b in batches) < 18:
            taken = pump.take(5, 10_000, 10_000)
            assert taken is not None
            tally, at_end = taken
            acknowledged = tally.finish(at_end, 0.0).acknowledged
            batches.append((tally.records, acknowledged, tally.first_seq, tally.seq))
    finally:
        pump.stop()
    assert [(records, acked) for records, acked, _, _ in batches] == [
        (5, 5), (5, 5), (5, 5), (3, 3)
    ]
    # Consecutive segments, one batch after the other.
    ends = [(first, last_seq) for _, _, first, last_seq in batches]
    assert all(b[0] == a[1] + 1 for a, b in itertools.pairwise(ends))
    assert segments == [5, 2, 3, 5, 1, 2]


def test_stopping_the_pump_does_not_wait_out_a_quiet_poll() -> None:
    """A stopped query's runner leaves the group at once, not after its poll timeout."""
    polling = threading.Event()

    def quiet(timeout_ms: int) -> list[Any]:
        polling.set()
        time.sleep(timeout_ms / 1000)
        return []

    def unexpected(*_: Any) -> None:
        raise AssertionError("nothing was polled")

    pump = JournalPump(quiet, unexpected, unexpected, AckStats(), 10, poll_timeout_ms=3_600_000)
    assert polling.wait(10)
    stopped = threading.Event()
    threading.Thread(target=lambda: (pump.stop(), stopped.set()), daemon=True).start()
    assert stopped.wait(30), "stop() waited for the hour-long poll"
