"""KafkaTopicSink on Apache Kafka, where transactions isolate and fence: a writer SIGKILLed
inside a batch's transaction or right after its commit is restarted and every source record
reaches read_committed readers once; a second writer of the same application (restarted, or a
pickled copy) fences the first; a record the broker refuses becomes a dead letter and the rest
of the batch commits."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from helpers.batches import source_rows
from helpers.pickled import copied

from kafka_share_eos import KafkaTopicSink, KafkaTransactionError, SqlDeadLetters
from kafka_share_eos.faults import CRASH_AT_ENV, SINK_MID_WRITE, STRATEGY_AFTER_WRITE
from kafka_share_eos.proving_ground.launchers.kafka_cluster import KafkaCluster
from kafka_share_eos.proving_ground.verify.kafka_targets import read_topic, source_coordinates

pytestmark = [pytest.mark.kafka, pytest.mark.timeout(300)]

BATCHES, PER_BATCH = 3, 10


def source_offsets(messages: list[Any]) -> list[int]:
    return sorted(source_coordinates(m)[1] for m in messages)

WRITER = """
import sys
import pyarrow as pa
from kafka_share_eos import KafkaTopicSink

bootstrap, topic, app_id = sys.argv[1:4]
first, batches, per_batch = map(int, sys.argv[4:7])
sink = KafkaTopicSink(topic, {"bootstrap.servers": bootstrap}, app_id=app_id)
for batch_id in range(first, batches):
    offsets = list(range(batch_id * per_batch, (batch_id + 1) * per_batch))
    sink.apply(pa.table({
        "topic": ["in"] * len(offsets), "partition": pa.array([0] * len(offsets), pa.int32()),
        "offset": pa.array(offsets, pa.int64()), "value": [b"v%d" % o for o in offsets],
    }), batch_id)
sink.close()
"""


def batch(offsets: list[int], *, size: int = 2) -> pa.Table:
    return source_rows(topic="in", partition=0, offset=offsets, value=b"." * size)


def output_topic(cluster: KafkaCluster, **config: str) -> str:
    name = f"out-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(name, 2, config=config)
    return name


def write(
    cluster: KafkaCluster, topic: str, app_id: str, crash_at: str | None, first: int = 0
) -> int:
    """Run batches ``first``.. in a process of their own, as Spark would from a checkpoint."""
    env = {k: v for k, v in os.environ.items() if k != CRASH_AT_ENV}
    if crash_at is not None:
        env[CRASH_AT_ENV] = crash_at
    done = subprocess.run(
        [sys.executable, "-c", WRITER, cluster.bootstrap_servers, topic, app_id,
         *map(str, (first, BATCHES, PER_BATCH))],
        env=env, capture_output=True, text=True, timeout=240, check=False,
    )
    assert done.returncode in (0, -signal.SIGKILL), done.stderr[-3000:]
    return done.returncode


@pytest.mark.parametrize("point", [f"{SINK_MID_WRITE}@2", f"{STRATEGY_AFTER_WRITE}@2"])
def test_a_writer_killed_in_or_after_a_transaction_writes_each_record_once(
    kafka_cluster: KafkaCluster, point: str
) -> None:
    topic = output_topic(kafka_cluster)
    app_id = f"app-{topic}"
    assert write(kafka_cluster, topic, app_id, point) == -signal.SIGKILL
    # Killed in batch 1, whose end Spark's commit log never saw: Spark runs batch 1 again.
    assert write(kafka_cluster, topic, app_id, None, first=1) == 0
    committed = read_topic(kafka_cluster.bootstrap_servers, topic)
    assert source_offsets(committed) == list(range(BATCHES * PER_BATCH))
    everything = read_topic(kafka_cluster.bootstrap_servers, topic, committed=False)
    assert len(everything) >= len(committed)


@pytest.mark.parametrize("successor_is", ["restarted", "pickled"])
def test_a_second_writer_of_the_application_fences_the_first(
    kafka_cluster: KafkaCluster, successor_is: str
) -> None:
    """The second writer is the application restarted, or a pickled copy of the first (as a
    Spark Connect server runs the strategy its client pickled): either fences the first."""
    topic = output_topic(kafka_cluster)
    config = {"bootstrap.servers": kafka_cluster.bootstrap_servers}
    zombie = KafkaTopicSink(topic, config, app_id=f"app-{topic}")
    zombie.apply(batch([0, 1]), 0)
    successor = (KafkaTopicSink(topic, config, app_id=f"app-{topic}")
                 if successor_is == "restarted" else copied(zombie))
    assert successor.apply(batch([0, 1]), 0).write_path == "skipped-batch"
    with pytest.raises(KafkaTransactionError, match="took over"):
        zombie.apply(batch([2, 3]), 1)
    successor.apply(batch([2, 3]), 1)
    zombie.close()
    successor.close()
    assert source_offsets(read_topic(kafka_cluster.bootstrap_servers, topic)) == [0, 1, 2, 3]


def test_a_record_the_broker_refuses_is_dead_lettered_and_the_rest_committed(
    kafka_cluster: KafkaCluster, tmp_path: Path
) -> None:
    topic = output_topic(kafka_cluster, **{"max.message.bytes": "4000"})
    letters = SqlDeadLetters(f"sqlite:///{tmp_path / 'letters.db'}")
    sink = KafkaTopicSink(topic, {"bootstrap.servers": kafka_cluster.bootstrap_servers},
                          app_id=f"app-{topic}", dead_letters=letters)
    rows = pa.concat_tables([batch([0, 1]), batch([2], size=10_000), batch([3])])
    report = sink.apply(rows, 0)
    sink.close()
    assert (report.rows_written, report.dead_lettered) == (3, 1)
    assert source_offsets(read_topic(kafka_cluster.bootstrap_servers, topic)) == [0, 1, 3]
    (letter,) = letters.read().to_pylist()
    assert letter["offset"] == 2 and "too large" in letter["error"].lower()
