"""IdempotentUpsertSink.delta(engine="spark") in a Spark Connect session: a server with Delta's
jars and SQL extension (no Delta Connect plugin), its foreachBatch worker merging each batch once,
and a query run again on its checkpoint after a batch whose acknowledgement was refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from helpers import produce
from helpers.connect import DropsShareSessions
from helpers.delta_spark_batches import offsets
from helpers.streaming import run_available_now, share_stream

from kafka_share_eos import IdempotentUpsertSink
from kafka_share_eos.deltaspark.spark_session import delta_spark_settings
from kafka_share_eos.proving_ground.launchers.spark_connect import SparkConnectServer
from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.delta_spark, pytest.mark.connect, pytest.mark.timeout(400)]

RECORDS = 120


@pytest.fixture(scope="module")
def spark_connect_server() -> Iterator[SparkConnectServer]:
    """The server of this module's ``connect_spark`` sessions: one with delta-spark."""
    with SparkConnectServer(extra_conf=delta_spark_settings()) as server:
        yield server


def test_each_record_is_merged_once_through_a_refused_acknowledgement_and_a_rerun(
    spark_connect_server: SparkConnectServer, connect_spark: SparkSession, share_topic: ShareTopic,
    tmp_path: Path,
) -> None:
    produce(share_topic.bootstrap_servers, share_topic.topic,
            [b"v%d" % i for i in range(RECORDS)], batch_records=40)
    table = str(tmp_path / "orders")
    sink = IdempotentUpsertSink.delta(table, engine="spark", app_id="connect-merge")
    stream = share_stream(connect_spark, share_topic, tmp_path / "journal",
                          **{"kafka.max.poll.records": "50"})
    # The broker drops the share sessions after batch 0: its records come again, in a later
    # batch, and the MERGE keeps their first rows.
    run_available_now(stream, tmp_path / "checkpoint",
                      DropsShareSessions(sink, share_topic.bootstrap_servers),
                      server=spark_connect_server)
    # The same query again on its checkpoint: nothing left to read, nothing merged twice.
    run_available_now(share_stream(connect_spark, share_topic, tmp_path / "journal"),
                      tmp_path / "checkpoint", sink, server=spark_connect_server)

    assert offsets(table) == list(range(RECORDS))
