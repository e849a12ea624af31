"""CheckpointDedupStore end to end: embedded broker over TCP, the kafka-share source, local Spark.

The sink commits batch 1 and then fails, which kills the query before Spark's commit log and
before the source ACCEPTs the batch's records. On restart Spark replays batch 1 from the journal
(same batch id, same records) and the broker redelivers its records in later batches; the Delta
sink must still hold every produced record exactly once.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest
from helpers import produce
from helpers.ledgers import delta_rows
from helpers.streaming import run_available_now, share_stream

from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic
from kafka_share_eos.sinks.delta_append import DeltaAppendSink
from kafka_share_eos.strategies.checkpoint_dedup import CheckpointDedupStore

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.older_pyspark, pytest.mark.timeout(300)]


class FailsOnceAfterWriting:
    """Commits batch ``fail_on`` to the Delta sink, then raises, once."""

    def __init__(self, inner: DeltaAppendSink, fail_on: int) -> None:
        self.inner = inner
        self.fail_on: int | None = fail_on

    def bind_streaming_query(self, query_id: str) -> None:
        # The wrapped sink records batches under the query's id, as it does unwrapped after the
        # restart: otherwise the replayed batch would be new to it.
        self.inner.bind_streaming_query(query_id)

    def __call__(self, table: pa.Table, batch_id: int) -> bool:
        applied = self.inner(table, batch_id)
        if batch_id == self.fail_on:
            self.fail_on = None
            raise RuntimeError(f"sink connection lost after committing batch {batch_id}")
        return applied


def run(spark: SparkSession, topic: ShareTopic, tmp: Path, store: CheckpointDedupStore) -> None:
    df = share_stream(spark, topic, tmp / "journal", **{"kafka.max.poll.records": "40"})
    run_available_now(df, tmp / "checkpoint", store)


@pytest.mark.older_pyspark(full=True)
def test_failed_batch_replay_and_redeliveries_reach_the_sink_once(
    spark: SparkSession, share_topic: ShareTopic, tmp_path: Path
) -> None:
    written = produce(share_topic.bootstrap_servers, share_topic.topic,
                      [b"v%d" % i for i in range(160)], partitions=share_topic.partitions)
    expected = sorted((share_topic.topic, p, o) for p, o in written)
    ledger, sink = str(tmp_path / "ledger"), str(tmp_path / "sink")

    failing = CheckpointDedupStore(ledger, FailsOnceAfterWriting(DeltaAppendSink(sink), 1))
    with pytest.raises(Exception, match="sink connection lost"):
        run(spark, share_topic, tmp_path, failing)
    after_failure = delta_rows(sink)
    assert len(after_failure) == len(set(after_failure)) < len(expected)

    store = CheckpointDedupStore(ledger, DeltaAppendSink(sink))
    while len(set(delta_rows(sink))) < len(expected):
        before = store.totals.batches
        run(spark, share_topic, tmp_path, store)
        assert store.totals.batches > before, "a restart made no progress"

    assert delta_rows(sink) == expected
    assert delta_rows(ledger) == expected
    replay = store.reports[0]
    assert replay.batch_id == 1, "Spark did not replay the failed batch"
    assert (replay.rows_written, replay.write_path) == (0, "sink-skipped-batch")
    assert store.totals.already_applied > 0, "no redelivery reached the store"
