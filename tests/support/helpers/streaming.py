"""Building kafka-share streams and running them to the end in the session's Spark."""

from __future__ import annotations

import threading
import weakref
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import kafka_share_eos
from helpers.processes import wait_until
from kafka_share_eos.proving_ground import streams
from kafka_share_eos.proving_ground.launchers.spark import source_runners, wait_for_source_runners
from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

    from kafka_share_eos.proving_ground.launchers.spark_connect import SparkConnectServer
    from kafka_share_eos.strategies.base import BatchStrategy

# Sessions the format is registered with. Registering again while another thread's query runs
# replaces the data source under it; tests that run queries side by side register once.
_registered: weakref.WeakSet[SparkSession] = weakref.WeakSet()
_registering = threading.Lock()


def _register_once(spark: SparkSession) -> None:
    with _registering:
        if spark not in _registered:
            kafka_share_eos.register(spark)
            _registered.add(spark)


class Offsets:
    """A ``foreachBatch`` sink counting how often each ``(partition, offset)`` came."""

    def __init__(self) -> None:
        self.seen: Counter[tuple[int, int]] = Counter()

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        for row in batch.select("partition", "offset").collect():
            self.seen[(row["partition"], row["offset"])] += 1


def share_stream(
    spark: SparkSession, topic: ShareTopic, journal: Path | None, **options: str
) -> DataFrame:
    """The kafka-share source on ``topic``'s share group; ``journal=None`` leaves out
    ``journalPath`` so that its absence can be tested."""
    _register_once(spark)
    return streams.share_stream(spark, streams.source_options(
        topic.bootstrap_servers, topic.group_id, topic.topic, journal, **options
    ))


def run_available_now(
    df: DataFrame,
    checkpoint: Path | str,
    sink: Callable[[DataFrame, int], object],
    timeout: float = 180,
    server: SparkConnectServer | None = None,
) -> StreamingQuery:
    """Run ``df`` into the ``foreachBatch`` ``sink`` until the source has nothing more;
    ``server`` is the Spark Connect server of ``df``'s session, if it is a client's.

    A failing batch raises here; the query is stopped in every case, so a hang or a failure
    leaves no query running into the next test.
    """
    query = (
        df.writeStream.foreachBatch(sink)
        .trigger(availableNow=True)
        .option("checkpointLocation", str(checkpoint))
        .start()
    )
    try:
        finished = query.awaitTermination(timeout)
    finally:
        query.stop()
        if server is None:
            wait_for_source_runners(df.sparkSession)
        else:
            wait_until(lambda: not source_runners(server.pid), 60,
                       "the Connect server's kafka-share source runners to exit")
    assert finished, f"the availableNow query did not finish within {timeout} s"
    assert query.exception() is None
    return query


def restart_until(run: Callable[[BatchStrategy], object], strategy: BatchStrategy,
                  done: Callable[[], bool]) -> None:
    """``run(strategy)`` again, as a restarted query would, until ``done()``; every run must
    apply at least one batch."""
    while not done():
        before = strategy.totals.batches
        run(strategy)
        assert strategy.totals.batches > before, "a restart made no progress"
