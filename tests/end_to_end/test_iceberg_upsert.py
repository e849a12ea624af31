"""The Iceberg upsert sink as Spark runs it: a copy pickled into a new process (as a Spark
Connect server runs the strategy its client sent), and the kafka-share source on the embedded
broker through ``foreachBatch`` into an Iceberg table, across a query that fails right after the
sink committed a batch, and across a column dropped by another writer, which stops the query
with no record acknowledged."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from helpers import produce
from helpers.iceberg import (
    BACKENDS,
    batches_committed,
    catalog_config,
    load,
    offsets,
    open_catalog,
)
from helpers.pickled import apply_elsewhere
from helpers.streaming import run_available_now, share_stream
from helpers.upsert_rows import records
from pyiceberg.types import BinaryType

from kafka_share_eos.iceberg.snapshots import APPLICATION, QUERY
from kafka_share_eos.proving_ground.console import CrashOnce
from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic
from kafka_share_eos.strategies import IdempotentUpsertSink

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.timeout(300)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("given", ["configuration", "catalog"])
def test_a_copy_in_a_new_process_applies_every_record_once(
    backend: str, given: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    config = catalog_config(request, tmp_path, backend)
    catalog = config if given == "configuration" else open_catalog(config)
    sink = IdempotentUpsertSink.iceberg("db.events", catalog=catalog, create_table=True)
    first, second = records([(0, o) for o in range(6)]), records([(0, o) for o in range(3, 10)])

    before = sink.apply(first, 0)
    replayed, later = apply_elsewhere(sink, [(first, 0), (second, 1)])

    assert offsets(config) == [(0, o) for o in range(10)]
    assert (before.rows_written, replayed.rows_written, later.rows_written) == (6, 0, 4)
    assert replayed.write_path == "skipped-batch"
    assert batches_committed(config) == ["0", "1"]


def driver_lost(batch_id: int) -> RuntimeError:
    """The failure of a driver lost right after batch ``batch_id`` committed its effects."""
    return RuntimeError(f"driver lost after committing batch {batch_id}")


@pytest.mark.spark
def test_a_share_stream_lands_in_iceberg_exactly_once_across_a_failed_run(
    spark: SparkSession, share_topic: ShareTopic, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    written = produce(share_topic.bootstrap_servers, share_topic.topic,
                      [b"v%d" % i for i in range(80)], partitions=share_topic.partitions)
    expected = sorted(written)
    config = catalog_config(request, tmp_path, "sqlite")

    def run(pipeline: object) -> None:
        stream = share_stream(spark, share_topic, tmp_path / "journal",
                              **{"kafka.max.poll.records": "20"})
        run_available_now(stream, tmp_path / "checkpoint", pipeline)  # type: ignore[arg-type]

    def sink() -> IdempotentUpsertSink:
        return IdempotentUpsertSink.iceberg("db.events", catalog=config, create_table=True)

    with pytest.raises(Exception, match="driver lost after committing batch 1"):
        run(CrashOnce(sink(), 1, driver_lost))
    after_failure = offsets(config)
    assert len(after_failure) == len(set(after_failure)) < len(expected)

    restarted = sink()
    while len(set(offsets(config))) < len(expected):
        before = restarted.totals.batches
        run(restarted)
        assert restarted.totals.batches > before, "a restart made no progress"

    assert offsets(config) == expected
    replay = restarted.reports[0]
    assert replay.batch_id == 1, "Spark did not replay the failed batch"
    assert (replay.rows_written, replay.write_path) == (0, "skipped-batch")
    # Batches are recorded under the streaming query's id, which the checkpoint keeps.
    query = restarted.writer.query_id  # type: ignore[attr-defined]
    summary = load(config).current_snapshot().summary  # type: ignore[union-attr]
    assert query is not None and summary[QUERY] == query
    assert summary[APPLICATION] == f"kafka-share-eos/upsert:{query}"


COLUMNS = ["topic", "partition", "offset", "value", "deliveryCount"]
"""The source's columns the rows of ``records`` have."""


@pytest.mark.spark
@pytest.mark.full
def test_a_column_another_writer_dropped_stops_the_stream_with_no_record_acknowledged(
    spark: SparkSession, share_topic: ShareTopic, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    config = catalog_config(request, tmp_path, "sqlite")
    sink = IdempotentUpsertSink.iceberg("db.events", catalog=config, create_table=True)
    sink.apply(records([(9, 0)]), 0)  # the table, as the pipeline's first run left it
    with load(config).update_schema() as update:
        update.delete_column("value")
    written = produce(share_topic.bootstrap_servers, share_topic.topic,
                      [b"v%d" % i for i in range(40)], partitions=share_topic.partitions)

    def run() -> None:
        stream = share_stream(spark, share_topic, tmp_path / "journal",
                              **{"kafka.max.poll.records": "20"}).select(*COLUMNS)
        run_available_now(stream, tmp_path / "checkpoint", IdempotentUpsertSink.iceberg(
            "db.events", catalog=config, create_table=True))

    with pytest.raises(Exception, match=r"iceberg:c\w+\.db\.events lacks column\(s\) \['value'\]"):
        run()
    assert offsets(config) == [(9, 0)]
    with load(config).update_schema() as update:
        update.add_column("value", BinaryType())
    run()

    # Every record came back to the restarted query: none was acknowledged unwritten.
    assert offsets(config) == sorted([*written, (9, 0)])
