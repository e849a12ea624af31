"""Peers on Apache Kafka: the toolkit against what a user would run instead, on one broker.

Every comparison reads the same records from one Apache Kafka broker of the launcher
(:class:`~kafka_share_eos.proving_ground.launchers.kafka_cluster.KafkaCluster`), each contender in a
group of its own reading from the earliest offset:

- *source*: a ``kafka-share`` query (``afterJournal``, two polls per micro-batch, the ``noop``
  sink) against a bare ``ShareConsumer`` loop, as
  :mod:`~kafka_share_eos.proving_ground.bench.source` does on the embedded broker (stream rate
  against the raw loop's rate, medians over rounds);
- *join*: a ``kafka-share`` query's time from ``start()`` to its first records against a bare
  ``ShareConsumer``'s from ``subscribe`` (:mod:`~kafka_share_eos.proving_ground.bench.join`):
  whether a query's start-up is Kafka's or the toolkit's;
- *queues*: a bare share-group loop against a bare consumer-group loop, one process each
  (:mod:`~kafka_share_eos.proving_ground.bench.raw_group`): the price Kafka itself puts on queues;
- *consumers*: ``consumers=N`` against N raw ``ShareConsumer`` processes
  (:func:`kafka_share_eos.proving_ground.bench.consumers.measure`);
- *Spark's Kafka source*: each strategy's ``kafka-share`` pipeline exactly once against Spark's
  ``format("kafka")`` writing the same sink at least once
  (:mod:`~kafka_share_eos.proving_ground.bench.spark_kafka`, in the pyspark 4.2 tier; reported as
  not run without it).

Run ``python benchmarks/bench_peers.py --help``; ``run()`` returns the numbers.
"""

from __future__ import annotations

import json
import statistics
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.proving_ground.bench import consumers, join, raw_group, source, spark_kafka
from kafka_share_eos.proving_ground.bench.common import (
    kafka_cluster,
    postgres_database,
    script_parser,
)
from kafka_share_eos.proving_ground.bench.streams import produce

if TYPE_CHECKING:
    from kafka_share_eos.proving_ground.launchers.kafka_cluster import KafkaCluster

PIPELINE_TOPIC = "bench-peers-pipelines"
LONG_TOPIC = "bench-peers-long"
PARTITIONS = 8
SPARK_KAFKA_ROW = "kafka-share pipelines exactly once vs Spark's Kafka source at least once"


def _source_and_queues(
    kafka: KafkaCluster, work: Path, records: int, poll_records: int, rounds: int
) -> list[dict[str, Any]]:
    """Rounds of the raw share loop, the ``kafka-share`` query, the raw consumer-group loop and
    the start-up of a query against a raw consumer's, in one Spark session."""
    from kafka_share_eos.proving_ground.launchers.spark import local_spark_session
    from kafka_share_eos.source import register

    bootstrap = kafka.bootstrap_servers

    def earliest(group: str) -> None:
        kafka.set_group_config(group, {"share.auto.offset.reset": "earliest"})

    spark = local_spark_session("kafka-share-eos-bench-peers")
    measured = []
    try:
        spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "100000")
        register(spark)
        source.warm_up(spark, bootstrap, work, earliest)
        for n in range(1, rounds + 1):
            earliest(f"bench-raw-kafka-{n}")
            raw = source.raw_loop(bootstrap, records, poll_records, f"bench-raw-kafka-{n}")
            query = source.spark_drain(spark, bootstrap, work, "afterJournal", records,
                                       f"kafka-{n}", source.after_journal_options(poll_records),
                                       earliest)
            earliest(f"bench-share-loop-{n}")
            share = raw_group.drain("share", bootstrap, source.TOPIC, records, 1,
                                    f"bench-share-loop-{n}", poll_records)
            group = raw_group.drain("consumer", bootstrap, source.TOPIC, records, 1,
                                    f"bench-consumer-loop-{n}", poll_records)
            joined = join.measure(spark, bootstrap, source.TOPIC, work, poll_records, str(n),
                                  earliest)
            raw_rate = raw["records"] / raw["seconds"]
            measured.append({
                **{f"join_{key}": value for key, value in joined.items()},
                "raw_records_per_second": raw_rate,
                "source_records_per_second": query["stream_records_per_second"],
                "source_vs_raw": query["stream_records_per_second"] / raw_rate,
                "share_loop_records_per_second": share["records_per_second"],
                "consumer_loop_records_per_second": group["records_per_second"],
                "share_vs_consumer_group": share["records_per_second"]
                / group["records_per_second"],
            })
    finally:
        spark.stop()
    return measured


def run(
    records: int = 600_000,
    poll_records: int = 50_000,
    consumers_records: int = 200_000,
    consumers_per_trigger: int = 40_000,
    pipeline_records: int = 100_000,
    pipeline_per_trigger: int = 10_000,
    rounds: int = 3,
    long_records: int = 1_000_000,
    long_rounds: int = 1,
    drain_idle_ms: int = consumers.DRAIN_IDLE_MS,
    kafka: KafkaCluster | None = None,
    postgres_url: str | None = None,
) -> dict[str, Any]:
    """Every peer comparison on ``kafka`` (default: a broker of its own).

    Args:
        records: records the source and the raw loops read (32 partitions).
        poll_records: ``max.poll.records`` of the source and the raw loops.
        consumers_records: records each consumers contender reads (8 partitions).
        consumers_per_trigger: ``maxRecordsPerTrigger`` of the consumers contenders.
        pipeline_records: records each pipeline of the Spark Kafka comparison reads.
        pipeline_per_trigger: records per micro-batch of those pipelines.
        rounds: rounds of every comparison; ratios are medians over them.
        long_records: records each pipeline of the Spark Kafka comparison's long runs reads.
        long_rounds: rounds of those long runs.
        drain_idle_ms: ``availableNowIdleMs`` of the consumers drains.
        kafka: a running broker to share with the run's other Kafka benchmarks.
        postgres_url: a database for the pipelines' Postgres sinks (default: a throwaway
            server).

    Raises:
        ConfigurationError: a size below 1.
        KafkaLauncherError: Java or Maven missing, or the broker did not start.
        RuntimeError: a contender did not read every record.
    """
    if min(records, poll_records, consumers_records, consumers_per_trigger, pipeline_records,
           pipeline_per_trigger, rounds, long_records, long_rounds) < 1:
        raise ConfigurationError("every size of the peers benchmark must be at least 1")
    with kafka_cluster(kafka) as cluster, \
            tempfile.TemporaryDirectory(prefix="kse-bench-peers-") as tmp:
        work, bootstrap = Path(tmp), cluster.bootstrap_servers
        for topic, partitions in ((source.TOPIC, 32), (source.WARM_UP_TOPIC, 1),
                                  (consumers.TOPIC, PARTITIONS),
                                  (consumers.WARM_UP_TOPIC, max(consumers.CONSUMER_COUNTS)),
                                  (PIPELINE_TOPIC, PARTITIONS), (LONG_TOPIC, PARTITIONS),
                                  *((out, PARTITIONS)
                                    for out in spark_kafka.sink_outputs(rounds))):
            cluster.create_topic(topic, partitions)
        produce(bootstrap, source.TOPIC, records, 32, 100)
        produce(bootstrap, consumers.TOPIC, consumers_records, PARTITIONS, 100)
        produce(bootstrap, consumers.WARM_UP_TOPIC, consumers.WARM_UP_RECORDS,
                max(consumers.CONSUMER_COUNTS), 100)
        produce(bootstrap, PIPELINE_TOPIC, pipeline_records, PARTITIONS, 100)
        produce(bootstrap, LONG_TOPIC, long_records, PARTITIONS, 100)

        def earliest(group: str) -> None:
            cluster.set_group_config(group, {"share.auto.offset.reset": "earliest"})

        measured = _source_and_queues(cluster, work, records, poll_records, rounds)
        on_kafka = consumers.measure(bootstrap, work, consumers_records, consumers_per_trigger,
                                     rounds, drain_idle_ms, earliest)
        with postgres_database(postgres_url) as url:
            peer = spark_kafka.run_in_tier(
                spark_kafka.Workload(bootstrap, PIPELINE_TOPIC, pipeline_records,
                                     pipeline_per_trigger, rounds, url, LONG_TOPIC,
                                     long_records, long_rounds))
    result: dict[str, Any] = {"records": records, "rounds": measured,
                              "consumers": {**on_kafka, "partitions": PARTITIONS},
                              "spark_kafka": peer}
    for key in measured[0]:
        result[key] = statistics.median(r[key] for r in measured)
    if "not_run" in peer:
        result["not_run"] = {SPARK_KAFKA_ROW: peer["not_run"]}
    return result


def main() -> None:
    sizes = {"records": 600_000, "poll_records": 50_000, "consumers_records": 200_000,
             "consumers_per_trigger": 40_000, "pipeline_records": 100_000,
             "pipeline_per_trigger": 10_000, "rounds": 3, "long_records": 1_000_000,
             "long_rounds": 1}
    args = script_parser(__doc__, sizes).parse_args()
    result = run(args.records, args.poll_records, args.consumers_records,
                 args.consumers_per_trigger, args.pipeline_records, args.pipeline_per_trigger,
                 args.rounds, args.long_records, args.long_rounds)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
