"""The kafka-share source on the embedded broker through ``foreachBatch`` into an Iceberg table on
Iceberg's reference REST catalog server with its warehouse on S3, across a query that fails right
after the sink committed a batch: every record lands once, on the store."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from helpers import produce
from helpers.iceberg import batches_committed, load, offsets
from helpers.streaming import run_available_now, share_stream

from kafka_share_eos.proving_ground.console import CrashOnce
from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic
from kafka_share_eos.strategies import IdempotentUpsertSink

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.timeout(300)


# Spark's path through the sink runs in CI on the SQL catalog (test_iceberg_upsert.py) and this
# catalog and store under the sink alone (tests/sinks/test_iceberg_upsert_catalogs.py).
@pytest.mark.full
@pytest.mark.spark
def test_a_share_stream_lands_once_in_a_rest_catalog_table_on_s3_across_a_failed_run(
    spark: SparkSession, share_topic: ShareTopic, iceberg_rest_catalog_s3: dict[str, str],
    tmp_path: Path,
) -> None:
    expected = sorted(produce(share_topic.bootstrap_servers, share_topic.topic,
                              [b"v%d" % i for i in range(60)], partitions=share_topic.partitions))
    config, table = iceberg_rest_catalog_s3, f"ns_{uuid.uuid4().hex[:8]}.events"

    def run(pipeline: object) -> None:
        stream = share_stream(spark, share_topic, tmp_path / "journal",
                              **{"kafka.max.poll.records": "20"})
        run_available_now(stream, tmp_path / "checkpoint", pipeline)  # type: ignore[arg-type]

    def sink() -> IdempotentUpsertSink:
        return IdempotentUpsertSink.iceberg(table, catalog=config, create_table=True)

    def lost(batch_id: int) -> RuntimeError:
        return RuntimeError(f"driver lost after committing batch {batch_id}")

    with pytest.raises(Exception, match="driver lost after committing batch 1"):
        run(CrashOnce(sink(), 1, lost))
    restarted = sink()
    while len(set(offsets(config, table))) < len(expected):
        before = restarted.totals.batches
        run(restarted)
        assert restarted.totals.batches > before, "a restart made no progress"

    assert offsets(config, table) == expected
    replay = restarted.reports[0]
    assert (replay.batch_id, replay.write_path) == (1, "skipped-batch")
    committed = batches_committed(config, table)
    assert len(committed) == len(set(committed))
    assert load(config, table).location().startswith("s3://")
