"""A Kafka topic as the target, on Apache Kafka: the sink's price and the whole pipeline's.

- Sink: :class:`KafkaTopicSink` writing ``batches`` batches of ``batch_rows`` source rows (each
  batch one transaction with its marker), with its per-record ``kse.source`` header (the
  default) and without it (``source_header=False``), against a plain idempotent producer
  (``enable.idempotence=true``, ``acks=all``) producing the same records and flushing after each
  batch, as a pipeline without the toolkit does. The three take turns batch by batch, after an
  untimed first batch each; the medians of the per-batch times are compared.
- Pipeline: a ``kafka-share`` query reading the same records on the same cluster and writing
  them with ``foreachBatch`` through the sink (exactly once), against the same query writing
  them through the plain producer (at least once). Stream rates are taken as in
  :mod:`~kafka_share_eos.proving_ground.bench.end_to_end`; rounds alternate which pipeline goes
  first and the median ratio is reported. Each pipeline's output is counted by a read_committed
  reader.

Both run on a single Apache Kafka broker started by the launcher: librdkafka's mock cluster has
no transaction isolation, so its numbers would not be the price users pay. Run
``python benchmarks/bench_kafka_topic.py --help``; ``run()`` returns the numbers.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import confluent_kafka as ck
import pyarrow as pa

from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.proving_ground.bench.common import kafka_cluster, script_parser
from kafka_share_eos.proving_ground.bench.end_to_end import run_pipeline
from kafka_share_eos.proving_ground.bench.streams import produce
from kafka_share_eos.proving_ground.bench.upsert import source_rows

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from kafka_share_eos.proving_ground.launchers.kafka_cluster import KafkaCluster
    from kafka_share_eos.strategies import KafkaTopicSink

SOURCE_TOPIC = "bench-kafka-source"
PARTITIONS = 8
FLUSH_TIMEOUT_S = 60.0


class IdempotentWriter:
    """At least once into a topic: every record of a batch through an idempotent producer with
    ``acks=all``, then a flush; as a function for ``foreachBatch`` or called with Arrow rows."""

    def __init__(self, topic: str, config: dict[str, Any]) -> None:
        self.topic = topic
        self._producer = ck.Producer({**config, "enable.idempotence": True, "acks": "all"})

    def write(self, rows: pa.Table) -> None:
        """Produce ``rows``' ``key`` and ``value`` and wait until the broker has them all.

        Raises:
            RuntimeError: a record was refused or not acknowledged in time.
        """
        failed: list[ck.KafkaError] = []

        def delivered(error: ck.KafkaError | None, _: Any) -> None:
            if error is not None:
                failed.append(error)

        produce = self._producer.produce
        for key, value in zip(rows["key"].to_pylist(), rows["value"].to_pylist(), strict=True):
            while True:
                try:
                    produce(self.topic, value, key, on_delivery=delivered)
                    break
                except BufferError:
                    self._producer.poll(0.05)
        undelivered = self._producer.flush(FLUSH_TIMEOUT_S)
        if undelivered or failed:
            raise RuntimeError(f"the idempotent producer left {undelivered} records undelivered "
                               f"after {FLUSH_TIMEOUT_S:.0f} s; refused: {failed[:3]}")

    def __call__(self, batch_df: DataFrame, batch_id: int) -> None:
        self.write(batch_df.toArrow())

    def close(self) -> None:
        """Close the producer (everything was flushed with its batch)."""
        self._producer.close()


def _sink(topic: str, config: dict[str, Any], app_id: str | None = None,
          source_header: bool = True) -> KafkaTopicSink:
    from kafka_share_eos.strategies import KafkaTopicSink

    return KafkaTopicSink(topic, config, app_id=app_id, source_header=source_header)


def _committed_count(bootstrap: str, topic: str) -> int:
    from kafka_share_eos.proving_ground.verify.kafka_targets import read_topic

    return len(read_topic(bootstrap, topic))


def bench_sink(kafka: KafkaCluster, batch_rows: int, batches: int) -> dict[str, float]:
    """The sink, with its ``kse.source`` header and without, against the idempotent producer,
    ``batches`` timed batches each, in turns."""
    config = kafka.client_config()
    outputs = {"sink": "bench-sink-out", "bare": "bench-bare-out", "plain": "bench-plain-out"}
    for topic in outputs.values():
        kafka.create_topic(topic, PARTITIONS)
    sinks = {"sink": _sink(outputs["sink"], config, app_id="bench-sink"),
             "bare": _sink(outputs["bare"], config, app_id="bench-bare", source_header=False)}
    plain = IdempotentWriter(outputs["plain"], config)
    times: dict[str, list[float]] = {name: [] for name in outputs}
    names = list(outputs)
    try:
        # Batch 0 (untimed) opens the producers, fences and creates the progress topic.
        for batch_id in range(batches + 1):
            rows = source_rows(batch_rows, batch_id * batch_rows)
            # Each contender goes first, second and last in turn.
            for name in names[batch_id % 3:] + names[:batch_id % 3]:
                started = time.perf_counter()
                if name in sinks:
                    sinks[name].apply(rows, batch_id)
                else:
                    plain.write(rows)
                if batch_id:
                    times[name].append(time.perf_counter() - started)
    finally:
        for sink in sinks.values():
            sink.close()
        plain.close()
    for name in sinks:
        written = _committed_count(kafka.bootstrap_servers, outputs[name])
        if written != (batches + 1) * batch_rows:
            raise RuntimeError(f"the {name} sink's topic holds {written} committed records, "
                               f"not {(batches + 1) * batch_rows}")
    median = {name: statistics.median(seconds) for name, seconds in times.items()}
    return {
        "batch_rows": batch_rows, "batches": batches,
        "sink_rows_per_s": batch_rows / median["sink"],
        "bare_sink_rows_per_s": batch_rows / median["bare"],
        "plain_rows_per_s": batch_rows / median["plain"],
        "sink_vs_plain": median["plain"] / median["sink"],
        "bare_sink_vs_plain": median["plain"] / median["bare"],
    }


def bench_pipelines(
    kafka: KafkaCluster, records: int, per_trigger: int, rounds: int
) -> list[dict[str, Any]]:
    """``rounds`` rounds of the two pipelines over the same ``records`` records."""
    from kafka_share_eos.proving_ground.launchers.spark import local_spark_session
    from kafka_share_eos.source import register

    bootstrap = kafka.bootstrap_servers
    config = kafka.client_config()
    kafka.create_topic(SOURCE_TOPIC, PARTITIONS)
    produce(bootstrap, SOURCE_TOPIC, records, PARTITIONS, 100)

    def earliest(group: str) -> None:
        kafka.set_group_config(group, {"share.auto.offset.reset": "earliest"})

    def pipeline(write: Any, tag: str, count: int) -> dict[str, float]:
        return run_pipeline(spark, bootstrap, work, write, tag, count, per_trigger,
                            SOURCE_TOPIC, earliest)

    measured = []
    spark = local_spark_session("kafka-share-eos-bench-kafka-topic")
    with tempfile.TemporaryDirectory(prefix="kse-bench-kafka-topic-") as tmp:
        work = Path(tmp)
        try:
            spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "100000")
            register(spark)
            for name in ("warm-eos", "warm-alo"):
                kafka.create_topic(f"out-{name}", PARTITIONS)
            # Untimed: Spark's Python workers, the libraries and both kinds of producer.
            warm_sink = _sink("out-warm-eos", config)
            warm_plain = IdempotentWriter("out-warm-alo", config)

            def warm(batch_df: DataFrame, batch_id: int) -> None:
                warm_sink(batch_df, batch_id)
                warm_plain(batch_df, batch_id)

            try:
                pipeline(warm, "warm-up", per_trigger)
            finally:
                warm_sink.close()
                warm_plain.close()
            for n in range(1, rounds + 1):
                runs = {}
                for side in ("eos", "alo") if n % 2 else ("alo", "eos"):
                    tag = f"{side}-{n}"
                    kafka.create_topic(f"out-{tag}", PARTITIONS)
                    write: KafkaTopicSink | IdempotentWriter = (
                        _sink(f"out-{tag}", config) if side == "eos"
                        else IdempotentWriter(f"out-{tag}", config))
                    try:
                        runs[side] = pipeline(write, tag, records)
                    finally:
                        write.close()
                    runs[side]["committed_output"] = _committed_count(bootstrap, f"out-{tag}")
                if runs["eos"]["committed_output"] != records:
                    raise RuntimeError(f"the exactly-once pipeline wrote "
                                       f"{runs['eos']['committed_output']} records, not {records}")
                measured.append({
                    "exactly_once": runs["eos"], "at_least_once": runs["alo"],
                    "ratio": runs["eos"]["records_per_second"]
                    / runs["alo"]["records_per_second"],
                })
        finally:
            spark.stop()
    return measured


def run(
    batch_rows: int = 10_000,
    batches: int = 15,
    records: int = 100_000,
    per_trigger: int = 10_000,
    rounds: int = 3,
    kafka: KafkaCluster | None = None,
) -> dict[str, Any]:
    """The sink benchmark, then the pipelines, on one Apache Kafka broker: ``kafka`` (shared
    with the run's other Kafka benchmarks) or one of its own.

    Raises:
        ConfigurationError: a size below 1.
        KafkaLauncherError: Java or Maven missing, or the broker did not start.
        RuntimeError: a pipeline failed, or a topic holds other records than it should.
    """
    if min(batch_rows, batches, records, per_trigger, rounds) < 1:
        raise ConfigurationError("every size of the Kafka topic benchmark must be at least 1")
    with kafka_cluster(kafka) as cluster:
        sink = bench_sink(cluster, batch_rows, batches)
        measured = bench_pipelines(cluster, records, per_trigger, rounds)
    return {
        "sink": sink, "records": records, "per_trigger": per_trigger, "rounds": measured,
        "pipeline_ratio": statistics.median(r["ratio"] for r in measured),
    }


def main() -> None:
    sizes = {"batch_rows": 10_000, "batches": 15, "records": 100_000, "per_trigger": 10_000,
             "rounds": 3}
    args = script_parser(__doc__, sizes).parse_args()
    result = run(args.batch_rows, args.batches, args.records, args.per_trigger, args.rounds)
    print(json.dumps(result, indent=2))
    print(f"sink: {result['sink']['sink_vs_plain']:.2f}x of the idempotent producer; "
          f"pipeline: exactly once {result['pipeline_ratio']:.2f}x of at least once")


if __name__ == "__main__":
    main()
