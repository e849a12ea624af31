"""Spark's progress next to the toolkit's figures: the listener counts each progress event of
the watched query (numInputRows, durationMs per stage), ignores other queries, and logs Spark's
numbers beside the strategy's report of the same batch."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from helpers import produce
from helpers.processes import wait_until
from helpers.streaming import share_stream
from prometheus_client import CollectorRegistry

from kafka_share_eos.monitoring import PipelineMetrics, serve_metrics
from kafka_share_eos.proving_ground import streams
from kafka_share_eos.proving_ground.launchers.spark import wait_for_source_runners
from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic
from kafka_share_eos.strategies import IdempotentUpsertSink

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]

COUNT = 30


def test_progress_events_are_counted_per_query(
    spark: SparkSession, share_topic: ShareTopic, tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    produce(share_topic.bootstrap_servers, share_topic.topic,
            [b"v%d" % i for i in range(COUNT)], partitions=share_topic.partitions)
    sink = IdempotentUpsertSink.sql(f"sqlite:///{tmp_path / 'db'}", "events", create_table=True)
    options = streams.source_options(share_topic.bootstrap_servers, share_topic.group_id,
                                     share_topic.topic, tmp_path / "journal")
    watched, other = PipelineMetrics("watched", options, sink), PipelineMetrics("idle", options)
    registry = CollectorRegistry()
    caplog.set_level(logging.INFO, logger="kafka_share_eos.monitoring")
    with serve_metrics(watched, other, port=0, addr="127.0.0.1", spark=spark,
                       registry=registry):
        df = share_stream(spark, share_topic, tmp_path / "journal",
                          **{"kafka.max.poll.records": "10"})
        query = (df.writeStream.foreachBatch(sink).queryName("watched")
                 .trigger(availableNow=True)
                 .option("checkpointLocation", str(tmp_path / "cp")).start())
        try:
            assert query.awaitTermination(180)
        finally:
            query.stop()
            wait_for_source_runners(spark)
        batches = len(sink.reports)
        # Spark's listener bus delivers progress events after the batch, asynchronously.
        wait_until(lambda: _counted(watched) == batches, 60, "a progress event per batch")
    with watched.lock:
        assert watched.spark.input_rows == sink.totals.rows_in >= COUNT
        assert {"addBatch", "triggerExecution"} <= set(watched.spark.stages)
    assert other.spark.batches == 0
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("watched batch")]
    assert len(lines) == batches
    assert all("Spark read" in line and "in, " in line for line in lines)
    sink.close()


def _counted(pipeline: PipelineMetrics) -> int:
    with pipeline.lock:
        return pipeline.spark.batches
