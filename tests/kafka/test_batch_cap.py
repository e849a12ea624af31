"""``maxRecordsPerTrigger`` as a hard cap on Apache Kafka, whose share fetches acquire whole
producer batches: with producer batches larger than the cap, no micro-batch holds more than it,
with one consumer in the source runner and with four in executor tasks, and every record
arrives once, on its first delivery (what a poll brought beyond the cap waits in the journal,
never RELEASEd to come back).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from helpers import produce
from helpers.streaming import run_available_now, share_stream

from kafka_share_eos.pipeline_status import journal_status
from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic
from kafka_share_eos.source.slots import CARRIED

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.kafka, pytest.mark.timeout(300)]

CAP = 100
RECORDS = 600
PRODUCER_BATCH = 250


class BatchSizes:
    """A ``foreachBatch`` sink noting each micro-batch's size and every record's deliveries."""

    def __init__(self) -> None:
        self.sizes: list[int] = []
        self.seen: Counter[tuple[int, int]] = Counter()
        self.delivery_counts: set[int] = set()

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        rows = batch.select("partition", "offset", "deliveryCount").collect()
        self.sizes.append(len(rows))
        for row in rows:
            self.seen[(row["partition"], row["offset"])] += 1
            self.delivery_counts.add(row["deliveryCount"])


@pytest.mark.partitions(2)
# One consumer's pump split polls at the cap before; four consumers' slots took whole fetches.
@pytest.mark.parametrize("consumers", [pytest.param(1, marks=pytest.mark.full), 4])
def test_no_micro_batch_exceeds_max_records_per_trigger(
    spark: SparkSession, kafka_topic: ShareTopic, tmp_path: Path, consumers: int
) -> None:
    written = produce(kafka_topic.bootstrap_servers, kafka_topic.topic,
                      (b"%d" % i for i in range(RECORDS)), partitions=2,
                      batch_records=PRODUCER_BATCH)
    sink = BatchSizes()
    df = share_stream(spark, kafka_topic, tmp_path / "journal", consumers=str(consumers),
                      acknowledge="afterJournal", maxRecordsPerTrigger=str(CAP),
                      availableNowIdleMs="3000")
    run_available_now(df, tmp_path / "checkpoint", sink)
    assert sorted(sink.seen) == sorted(written)
    assert set(sink.seen.values()) == {1}
    assert sink.delivery_counts == {1}
    assert max(sink.sizes) <= CAP, sink.sizes
    assert sum(1 for size in sink.sizes if size) >= RECORDS // CAP
    if consumers > 1:
        # A slot's share is 25; a fetch brought whole producer batches, the rest was carried.
        batches = journal_status(str(tmp_path / "journal")).batches
        assert any(entry.get(CARRIED) for batch in batches for entry in batch.consumers)
