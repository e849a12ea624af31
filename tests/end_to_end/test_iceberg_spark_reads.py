"""Spark reads every Iceberg table the toolkit writes, through the catalog the toolkit wrote it
to, with Iceberg's own Spark runtime (the iceberg-spark tier, pyspark 4.1): upsert targets,
the checkpoint-dedup store's append sink and its Iceberg ledger, the two-phase participant's
table and dead letters, on Iceberg's reference REST catalog server, and pyiceberg's SQL
catalog on SQLite read as Iceberg's JDBC catalog on the same file. Spark sees exactly the rows
written, each once, with their values, and the snapshot properties each commit carries."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest
from helpers.batches import source_rows
from helpers.iceberg import catalog_config, rows_of

from kafka_share_eos import (
    DEAD_LETTER_SCHEMA,
    CheckpointDedupStore,
    IcebergAppendSink,
    IcebergDeadLetters,
    IcebergLedger,
    IcebergParticipant,
    IdempotentUpsertSink,
    TwoPhaseCommitCoordinator,
)
from kafka_share_eos.iceberg.snapshots import APPLICATION, BATCH
from kafka_share_eos.proving_ground.launchers.iceberg_spark import spark_catalog_settings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.iceberg_spark, pytest.mark.spark, pytest.mark.timeout(300)]

KEY = ["topic", "partition", "offset"]
AT = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def records(offsets: range, version: int = 1) -> pa.Table:
    """Records of partition 0 at ``offsets``, with a column of each kind a pipeline writes."""
    return source_rows(
        topic="t", partition=0, offset=offsets,
        value=pa.array([f"v{o}.{version}".encode() for o in offsets], pa.binary()),
        version=pa.array([version] * len(offsets), pa.int64()),
        amount=pa.array([Decimal(o) / 100 for o in offsets], pa.decimal128(12, 2)),
        ratio=pa.array([o / 7 for o in offsets], pa.float64()),
        day=pa.array([(AT + dt.timedelta(days=o)).date() for o in offsets], pa.date32()),
        at=pa.array([AT + dt.timedelta(seconds=o) for o in offsets], pa.timestamp("us", "UTC")),
        tags=pa.array([[o, o + 1] for o in offsets], pa.list_(pa.int64())),
        attrs=pa.array([[("k", o)] for o in offsets], pa.map_(pa.string(), pa.int64())),
        point=pa.array([{"x": o, "label": str(o)} for o in offsets],
                       pa.struct([("x", pa.int64()), ("label", pa.string())])),
    )


def in_spark(spark: SparkSession, config: Mapping[str, Any], table: str) -> str:
    """The table's name in Spark, its catalog set up from the configuration the toolkit took."""
    settings = spark_catalog_settings(config)
    for key, value in settings.items():
        spark.conf.set(key, value)
    return f"{min(settings).removeprefix('spark.sql.catalog.')}.{table}"


def assert_spark_reads_exactly(spark: SparkSession, config: Mapping[str, Any], table: str,
                               order: list[str], count: int) -> list[dict[str, Any]]:
    """Spark's rows of the table are pyiceberg's, ``count`` of them and none twice; they are
    returned."""
    name = in_spark(spark, config, table)
    frame = spark.table(name)
    read = sorted(frame.toArrow().to_pylist(), key=lambda row: [row[c] for c in order])
    ours = sorted(rows_of(dict(config), table).to_pylist(),
                  key=lambda row: [row[c] for c in order])
    assert frame.count() == len(read) == count
    assert len({tuple(row[c] for c in order) for row in read}) == count
    assert read == ours
    return read


def batches_seen_by_spark(spark: SparkSession, config: Mapping[str, Any], table: str
                          ) -> list[tuple[str | None, str | None]]:
    """(application, batch) of each snapshot, oldest first, from Spark's ``snapshots`` table."""
    name = in_spark(spark, config, table)
    rows = spark.sql(f"SELECT summary FROM {name}.snapshots ORDER BY committed_at").collect()
    return [(row.summary.get(APPLICATION), row.summary.get(BATCH)) for row in rows]


@pytest.fixture
def rest(iceberg_rest_catalog: dict[str, str]) -> tuple[dict[str, str], str]:
    """The REST catalog and a namespace of this test's own."""
    return iceberg_rest_catalog, f"ns_{uuid.uuid4().hex[:8]}"


def test_an_upsert_target_reads_in_spark_with_each_key_once_at_its_latest_version(
    spark: SparkSession, rest: tuple[dict[str, str], str]
) -> None:
    config, namespace = rest
    table = f"{namespace}.events"
    sink = IdempotentUpsertSink.iceberg(table, catalog=config, key_columns=KEY,
                                        version_column="version", create_table=True,
                                        app_id="app")
    sink.apply(records(range(0, 20)), 0)
    sink.apply(records(range(10, 30), version=2), 1)  # 10 replaced, 10 new
    sink.apply(records(range(10, 30), version=2), 1)  # a replay: skipped

    read = assert_spark_reads_exactly(spark, config, table, KEY, 30)
    assert [row["version"] for row in read] == [1] * 10 + [2] * 20
    assert [row["value"] for row in read][9:11] == [b"v9.1", b"v10.2"]
    assert read[29]["at"] == AT + dt.timedelta(seconds=29)
    assert read[29]["amount"] == Decimal("0.29") and read[29]["tags"] == [29, 30]
    assert (read[29]["attrs"], read[29]["point"]) == ([("k", 29)], {"x": 29, "label": "29"})
    assert batches_seen_by_spark(spark, config, table)[-1] == ("app", "1")


@pytest.mark.parametrize("ledger", ["delta", "iceberg"])
def test_the_dedup_stores_append_sink_and_ledger_read_in_spark_once_per_record(
    spark: SparkSession, rest: tuple[dict[str, str], str], tmp_path: Path, ledger: str
) -> None:
    config, namespace = rest
    table = f"{namespace}.appended"
    sink = IcebergAppendSink(table, catalog=config, create_table=True)
    claims = (IcebergLedger(f"{namespace}.ledger", catalog=config) if ledger == "iceberg"
              else str(tmp_path / "ledger"))
    store = CheckpointDedupStore(claims, sink, app_id="app")
    for batch_id, start in enumerate(range(0, 30, 10)):
        store.apply(records(range(start, start + 10)), batch_id)
    store.apply(records(range(20, 30)), 2)  # a replay of the last batch
    store.apply(records(range(25, 35)), 3)  # five records again, five new

    assert assert_spark_reads_exactly(spark, config, table, KEY, 35)[-1]["offset"] == 34
    if ledger == "iceberg":
        read = assert_spark_reads_exactly(spark, config, f"{namespace}.ledger", KEY, 35)
        assert [row["_batch_id"] for row in read] == [0] * 10 + [1] * 10 + [2] * 10 + [3] * 5


def test_the_two_phase_participants_table_reads_in_spark_once_per_record(
    spark: SparkSession, rest: tuple[dict[str, str], str], tmp_path: Path
) -> None:
    config, namespace = rest
    table = f"{namespace}.payments"
    coordinator = TwoPhaseCommitCoordinator(
        str(tmp_path / "decisions"), [IcebergParticipant(table, catalog=config)], app_id="app")
    for batch_id, start in enumerate(range(0, 30, 10)):
        assert coordinator.apply(records(range(start, start + 10)), batch_id).rows_written == 10
    assert coordinator.apply(records(range(20, 30)), 2).rows_written == 0  # a replay

    read = assert_spark_reads_exactly(spark, config, table, KEY, 30)
    assert (read[29]["attrs"], read[29]["point"]) == ([("k", 29)], {"x": 29, "label": "29"})
    assert [batch for _, batch in batches_seen_by_spark(spark, config, table)][-3:] == [
        "0", "1", "2"]


def test_dead_letters_read_in_spark_with_every_field(
    spark: SparkSession, rest: tuple[dict[str, str], str]
) -> None:
    config, namespace = rest
    table = f"{namespace}.dead_letters"
    letters = pa.table({
        "letter_id": ["a", "b"], "topic": ["t", "t"], "partition": [0, 1], "offset": [5, 6],
        "delivery_count": [5, 1], "key": [b"k", None], "value": [b"\x00\xff", b"v"],
        "row": ['{"x": 1}', None], "stage": ["transform", "target"],
        "error_type": ["ValueError", "ValueNotStorableError"], "error": ["bad", "too big"],
        "strategy": ["s", "s"], "batch_id": [3, 4],
        "dead_lettered_at": [AT] * 2,
    }, schema=DEAD_LETTER_SCHEMA)
    assert IcebergDeadLetters(table, catalog=config).write(letters) == 2

    read = assert_spark_reads_exactly(spark, config, table, ["letter_id"], 2)
    assert [(row["value"], row["key"], row["dead_lettered_at"]) for row in read] == [
        (b"\x00\xff", b"k", AT), (b"v", None, AT)]


def test_a_sqlite_sql_catalog_reads_in_spark_as_the_jdbc_catalog_on_its_file(
    spark: SparkSession, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    config = catalog_config(request, tmp_path, "sqlite")
    sink = IdempotentUpsertSink.iceberg("db.events", catalog=config, key_columns=KEY,
                                        create_table=True, app_id="app")
    sink.apply(records(range(0, 20)), 0)
    sink.apply(records(range(15, 40)), 1)  # five keys already stored: left as they are

    read = assert_spark_reads_exactly(spark, config, "db.events", KEY, 40)
    assert [row["value"] for row in read][15:21] == [f"v{o}.1".encode() for o in range(15, 21)]
    assert batches_seen_by_spark(spark, config, "db.events")[-1] == ("app", "1")
