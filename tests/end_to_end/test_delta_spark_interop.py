"""delta-spark and the toolkit's Delta tables, both ways.

Every Delta table the toolkit writes with delta-rs (upsert targets, ``DeltaAppendSink``, the
dedup ledger, the two-phase participant's table, dead letters) reads back through
``spark.read.format("delta")`` with the same rows and the same types, checkpoints included.
And a user's delta-spark writes to a shared target between the toolkit's batches leave each
record applied once: the upsert's version guard, the dedup store's application transactions
and a staged two-phase commit hold.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable
from helpers.batches import source_rows

from kafka_share_eos import (
    DEAD_LETTER_SCHEMA,
    CheckpointDedupStore,
    DeltaAppendSink,
    DeltaDeadLetters,
    DeltaParticipant,
    IdempotentUpsertSink,
    TwoPhaseCommitCoordinator,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.delta_spark, pytest.mark.spark, pytest.mark.timeout(300)]

UTC = dt.UTC


def records(offsets: range, topic: str = "t") -> pa.Table:
    """Records of partition 0 at ``offsets``, with a column of every kind a pipeline writes:
    unsigned, decimal, binary, dates, timestamps with and without a time zone, nested."""
    at = [dt.datetime(2026, 1, 1, tzinfo=UTC) + dt.timedelta(seconds=o) for o in offsets]
    return source_rows(
        topic=topic, partition=0, offset=offsets,
        amount=pa.array([Decimal(o) / 100 for o in offsets], pa.decimal128(12, 2)),
        count=pa.array(list(offsets), pa.uint32()),
        ratio=pa.array([o / 7 for o in offsets], pa.float64()),
        flag=pa.array([o % 2 == 0 for o in offsets], pa.bool_()),
        payload=pa.array([f"v{o}".encode() for o in offsets], pa.binary()),
        day=pa.array([a.date() for a in at], pa.date32()),
        at=pa.array(at, pa.timestamp("us", tz="UTC")),
        local_at=pa.array([a.replace(tzinfo=None) for a in at], pa.timestamp("us")),
        tags=pa.array([[o, o + 1] for o in offsets], pa.list_(pa.int64())),
        attrs=pa.array([[("k", o)] for o in offsets], pa.map_(pa.string(), pa.int64())),
        point=pa.array([{"x": o, "label": str(o)} for o in offsets],
                       pa.struct([("x", pa.int64()), ("label", pa.string())])),
    )


def _rows(table: pa.Table, order: list[str]) -> list[dict[str, Any]]:
    return sorted(table.to_pylist(), key=lambda row: tuple(row[c] for c in order))


def spark_rows(spark: SparkSession, path: str, order: list[str]) -> list[dict[str, Any]]:
    return _rows(spark.read.format("delta").load(path).toArrow(), order)


def assert_spark_reads_what_delta_rs_wrote(spark: SparkSession, path: str,
                                           order: list[str]) -> None:
    """Same rows, and the same column types as the table's Delta schema declares."""
    ours = DeltaTable(path)
    frame = spark.read.format("delta").load(path)
    assert frame.schema.jsonValue()["fields"] == _schema_fields(ours)
    assert spark_rows(spark, path, order) == _rows(ours.to_pyarrow_table(), order)


def _schema_fields(table: DeltaTable) -> list[dict[str, Any]]:
    """The table's schema in Spark's JSON form (the Delta log stores exactly that)."""
    import json

    fields: list[dict[str, Any]] = json.loads(table.schema().to_json())["fields"]
    return fields


KEY = ["topic", "partition", "offset"]


def test_upsert_target_reads_back_through_spark_checkpoint_included(
    spark: SparkSession, tmp_path: Path
) -> None:
    path = str(tmp_path / "target")
    sink = IdempotentUpsertSink.delta(path, app_id="app")
    for batch_id, start in enumerate(range(0, 30, 10)):
        sink.apply(records(range(start, start + 10)), batch_id)
    DeltaTable(path).create_checkpoint()
    sink.apply(records(range(25, 40)), 3)
    assert_spark_reads_what_delta_rs_wrote(spark, path, KEY)
    assert len(spark_rows(spark, path, KEY)) == 40


def test_append_sink_ledger_and_dead_letters_read_back_through_spark(
    spark: SparkSession, tmp_path: Path
) -> None:
    ledger, sink_path = str(tmp_path / "ledger"), str(tmp_path / "sink")
    store = CheckpointDedupStore(ledger, DeltaAppendSink(sink_path), app_id="app",
                                 compact_every=2)
    for batch_id, start in enumerate(range(0, 40, 10)):
        store.apply(records(range(start, start + 10)), batch_id)
    assert_spark_reads_what_delta_rs_wrote(spark, sink_path, KEY)
    assert_spark_reads_what_delta_rs_wrote(spark, ledger, sorted(
        f.name for f in DeltaTable(ledger).schema().fields
    ))

    letters_path = str(tmp_path / "letters")
    letters = pa.table({
        "letter_id": ["a", "b"], "topic": ["t", "t"], "partition": [0, 1], "offset": [5, 6],
        "delivery_count": [5, 1], "key": [b"k", None], "value": [b"\x00\xff", b"v"],
        "row": ['{"x": 1}', None], "stage": ["transform", "target"],
        "error_type": ["ValueError", "ValueNotStorableError"], "error": ["bad", "too big"],
        "strategy": ["s", "s"], "batch_id": [3, 4],
        "dead_lettered_at": [dt.datetime(2026, 1, 1, tzinfo=UTC)] * 2,
    }, schema=DEAD_LETTER_SCHEMA)
    DeltaDeadLetters(letters_path).write(letters)
    assert_spark_reads_what_delta_rs_wrote(spark, letters_path, ["letter_id"])


def test_two_phase_participant_table_reads_back_through_spark(
    spark: SparkSession, tmp_path: Path
) -> None:
    path = str(tmp_path / "target")
    coordinator = TwoPhaseCommitCoordinator(str(tmp_path / "log"), [DeltaParticipant(path)],
                                            app_id="app")
    for batch_id, start in enumerate(range(0, 30, 10)):
        assert coordinator.apply(records(range(start, start + 10)), batch_id).rows_written == 10
    assert_spark_reads_what_delta_rs_wrote(spark, path, KEY)


def _spark_append(spark: SparkSession, path: str, rows: pa.Table) -> None:
    """A user's delta-spark append of ``rows`` to the table at ``path``."""
    spark_frame(spark, path, rows).write.format("delta").mode("append").save(path)


def spark_frame(spark: SparkSession, path: str, rows: pa.Table) -> Any:
    """``rows`` as a Spark DataFrame in the types of the table at ``path``."""
    schema = pa.schema(DeltaTable(path).schema().to_arrow())
    frame = spark.createDataFrame(rows.select(schema.names).cast(schema))
    # Arrow's zone-less timestamps arrive as Spark's TIMESTAMP; the table has TIMESTAMP_NTZ.
    target = spark.read.format("delta").load(path).schema
    return frame.select(*[frame[f.name].cast(f.dataType) for f in target])


def test_upsert_between_delta_spark_merges_applies_each_record_once(
    spark: SparkSession, tmp_path: Path
) -> None:
    from delta.tables import DeltaTable as SparkDeltaTable

    path = str(tmp_path / "target")
    sink = IdempotentUpsertSink.delta(path, app_id="app")
    sink.apply(records(range(10)), 0)
    # The user's own MERGE: new keys 100-104, and offset 3 rewritten in place.
    theirs = spark_frame(spark, path, records(range(100, 105)))
    (SparkDeltaTable.forPath(spark, path).alias("t")
     .merge(theirs.alias("s"), "t.offset = s.offset").whenNotMatchedInsertAll().execute())
    spark.sql(f"UPDATE delta.`{path}` SET ratio = -1.0 WHERE offset = 3")

    replay = sink.apply(records(range(10)), 0)  # batch 0 again, after a crash
    assert (replay.rows_written, replay.already_applied) == (0, 10)
    assert sink.apply(records(range(5, 15)), 1).rows_written == 5
    offsets = [row["offset"] for row in spark_rows(spark, path, KEY)]
    assert offsets == [*range(15), *range(100, 105)]
    [three] = spark.read.format("delta").load(path).where("offset = 3").collect()
    assert three["ratio"] == -1.0


def test_dedup_store_between_delta_spark_appends_applies_each_record_once(
    spark: SparkSession, tmp_path: Path
) -> None:
    ledger, sink_path = str(tmp_path / "ledger"), str(tmp_path / "sink")

    def store() -> CheckpointDedupStore:
        return CheckpointDedupStore(ledger, DeltaAppendSink(sink_path, app_id="app-sink"),
                                    app_id="app")

    store().apply(records(range(10)), 0)
    _spark_append(spark, sink_path, records(range(10), topic="user"))
    # A restart replays batch 0, then batch 1 brings redeliveries with new records.
    again = store()
    assert again.apply(records(range(10)), 0).rows_written == 0
    assert again.apply(records(range(5, 15)), 1).rows_written == 5
    rows = spark_rows(spark, sink_path, KEY)
    assert [r["offset"] for r in rows if r["topic"] == "t"] == list(range(15))
    assert [r["offset"] for r in rows if r["topic"] == "user"] == list(range(10))


def test_staged_two_phase_commit_after_a_delta_spark_append_writes_each_key_once(
    spark: SparkSession, tmp_path: Path
) -> None:
    from kafka_share_eos.twophase import Transaction

    path = str(tmp_path / "target")
    participant = DeltaParticipant(path)
    coordinator = TwoPhaseCommitCoordinator(str(tmp_path / "log"), [participant], app_id="app")
    coordinator.apply(records(range(5)), 0)
    token = participant.prepare(records(range(5, 15)), Transaction.new("app", 1, KEY))
    # Between prepare and commit a user appends offsets 10-12, which the staged batch holds.
    _spark_append(spark, path, records(range(10, 13)))
    assert participant.commit(token) == 3  # left out: already in the table
    offsets = [row["offset"] for row in spark_rows(spark, path, KEY)]
    assert offsets == list(range(15))
