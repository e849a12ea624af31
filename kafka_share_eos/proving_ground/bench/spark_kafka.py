"""Spark's own Kafka source as the peer of a ``kafka-share`` pipeline, on Apache Kafka.

The pipeline a user writes today without the toolkit: ``readStream.format("kafka")``
(spark-sql-kafka-0-10, a consumer group) writing with ``foreachBatch`` at least once. For every
strategy of :mod:`~kafka_share_eos.proving_ground.bench.pipelines`, its usual sink written by that
pipeline (its at-least-once writer) is compared with the ``kafka-share`` pipeline writing through
the strategy exactly once, on the same records of the same topic, in turns, stream rates taken from
the first micro-batch's start to the last one's end (as in
:mod:`~kafka_share_eos.proving_ground.bench.end_to_end`). That window holds each source's start-up,
in its first micro-batch's planning: a new share-group member gets its partitions one heartbeat
interval after it joins (5 s by Kafka's default, also the brokers' floor), while Spark's Kafka
source only looks up offsets. A short run is mostly that wait, so each round also reports the
rates from the first records on (``running_records_per_second``, ``start_s``) and their
``running_ratio``; and every strategy runs once more over a long topic (1M records in the full
run), where that wait is a small part of the run.

Spark's Kafka sink is the peer of :class:`KafkaTopicSink`: behind the same ``kafka-share``
query, the sink exactly once against spark-sql-kafka-0-10's writer (``format("kafka")``, the
batch's key and value, called from ``foreachBatch``) at least once, each into an output topic of
its own that the caller creates (:func:`sink_outputs`).

spark-sql-kafka-0-10's jars must match Spark's version, and its newest release on Maven Central
is 4.2.0: this runs in the pyspark 4.2 environment of the delta-spark tier
(``.venv-delta-spark``, made by ``./dev``). :func:`run_in_tier` starts this module there as a
child process (``python -m kafka_share_eos.proving_ground.bench.spark_kafka '<json arguments>'``,
which prints its result as JSON on its last line); without that environment the result says the peer
was not run, and why.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kafka_share_eos.proving_ground.bench.pipelines import Contest, ForeachBatch
from kafka_share_eos.proving_ground.bench.streams import (
    batches_with_data,
    rows_read,
    running_rate,
    stream_window,
)
from kafka_share_eos.proving_ground.bench.tier import TIER_PYTHON, child_main, run_module

"""The pyspark 4.2 tier's interpreter, in the project's checkout."""
SCALA_VERSION = "2.13"
QUERY_TIMEOUT_S = 600.0
CHILD_TIMEOUT_S = 3600.0
TOPIC_SINK = "Kafka topic sink"
Side = Callable[[str, str], dict[str, float]]
"""Runs one side of a contest, ``"eos"`` or ``"kafka"``, under a tag naming its targets."""


def kafka_query(spark: Any, bootstrap: str, topic: str, work: Path, write: Any, tag: str,
                records: int, per_trigger: int,
                progress_out: list[dict[str, Any]] | None = None) -> dict[str, float]:
    """Spark's Kafka source in consumer group ``bench-<tag>``, from the earliest offsets, into
    ``write`` until it has read every record (``availableNow`` ends the query there);
    ``progress_out`` receives the progress of its micro-batches with data."""
    query = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("kafka.group.id", f"bench-{tag}")
        .option("maxOffsetsPerTrigger", str(per_trigger))
        .load()
        .writeStream.foreachBatch(write).trigger(availableNow=True)
        .option("checkpointLocation", str(work / f"checkpoint-{tag}"))
        .start()
    )
    ended = query.awaitTermination(QUERY_TIMEOUT_S)
    query.stop()
    if not ended or query.exception() is not None:
        raise RuntimeError(f"Spark's Kafka pipeline {tag} did not end: {query.exception()}")
    progress = batches_with_data(query)
    if progress_out is not None:
        progress_out.extend(progress)
    if rows_read(progress) < records:
        raise RuntimeError(f"Spark's Kafka pipeline {tag} read {rows_read(progress)} of "
                           f"{records} records")
    start, end = stream_window(progress)
    return {"records": records, "batches": len(progress), "seconds": end - start,
            "records_per_second": records / (end - start),
            **running_rate(progress, records, end - start)}


def with_spark_kafka_package() -> None:
    """Make the next Spark session of this process fetch and load spark-sql-kafka-0-10 of
    this pyspark's version (before its JVM starts)."""
    import pyspark

    package = f"org.apache.spark:spark-sql-kafka-0-10_{SCALA_VERSION}:{pyspark.__version__}"
    os.environ["PYSPARK_SUBMIT_ARGS"] = f"--packages {package} pyspark-shell"


@dataclass(frozen=True)
class Workload:
    """What the child measures, on the Apache Kafka at ``bootstrap``: ``rounds`` rounds over
    ``records`` records of ``topic``, ``long_rounds`` over ``long_records`` of ``long_topic``,
    ``per_trigger`` records per micro-batch; the Postgres sinks in ``postgres_url``."""

    bootstrap: str
    topic: str
    records: int
    per_trigger: int
    rounds: int
    postgres_url: str
    long_topic: str
    long_records: int
    long_rounds: int


def sink_outputs(rounds: int) -> list[str]:
    """The output topics of the Kafka sink comparison over ``rounds`` rounds (its warm-up's
    first), which the caller creates: the brokers create no topic on first use."""
    return [f"bench-peers-out-{side}-{tag}"
            for tag in ("warm", *(f"sink-{n}" for n in range(1, rounds + 1)))
            for side in ("eos", "kafka")]


def _spark_kafka_sink(bootstrap: str, topic: str) -> ForeachBatch:
    """Spark's Kafka sink (spark-sql-kafka-0-10's writer, at least once) writing each batch's
    ``key`` and ``value`` to ``topic``."""

    def write(batch_df: Any, batch_id: int) -> None:
        (batch_df.select("key", "value").write.format("kafka")
         .option("kafka.bootstrap.servers", bootstrap).option("topic", topic).save())

    return write


def _topic_sink_contest(bootstrap: str) -> Contest:
    """The share source into :class:`KafkaTopicSink` exactly once against the share source into
    Spark's Kafka sink at least once, each round into topics of its own."""
    from kafka_share_eos.strategies import KafkaTopicSink

    def topic_sink(tag: str) -> ForeachBatch:
        sink: ForeachBatch = KafkaTopicSink(f"bench-peers-out-eos-{tag}",
                                            {"bootstrap.servers": bootstrap}, app_id=tag)
        return sink

    return Contest(TOPIC_SINK, topic_sink,
                   lambda tag: _spark_kafka_sink(bootstrap, f"bench-peers-out-kafka-{tag}"))


def _contest(run_side: Side, rounds: int, tag: str) -> dict[str, Any]:
    """``rounds`` rounds of ``run_side("eos" | "kafka", tag)``, alternating which goes first;
    the medians of the exactly-once side's rates over the other's."""
    runs: list[dict[str, Any]] = []
    for n in range(1, rounds + 1):
        sides = {side: run_side(side, f"{tag}-{n}")
                 for side in (("eos", "kafka") if n % 2 else ("kafka", "eos"))}
        runs.append({
            "exactly_once": sides["eos"], "spark_kafka": sides["kafka"],
            **{f"{prefix}ratio": sides["eos"][f"{prefix}records_per_second"]
               / sides["kafka"][f"{prefix}records_per_second"]
               for prefix in ("", "running_")},
        })
    return {**{key: statistics.median(r[key] for r in runs) for key in ("ratio", "running_ratio")},
            "rounds": runs}


def measure(**arguments: Any) -> dict[str, Any]:
    """In this process (the tier's): every strategy's two pipelines over the
    :class:`Workload`'s records, short and long, and the Kafka sinks' two pipelines.

    Returns:
        Per strategy under ``strategies`` (and ``long``) its ``ratio`` (the median over the
        rounds of exactly once over Spark's Kafka pipeline), ``running_ratio`` (the same from
        the first records on) and its ``rounds``; the Kafka sinks' the same under
        ``topic_sink``; ``spark``, the version that ran.

    Raises:
        RuntimeError: a pipeline did not read every record, or the exactly-once sink's topic
            holds other than one committed record per source record.
    """
    import pyspark

    from kafka_share_eos.proving_ground.bench.end_to_end import run_pipeline
    from kafka_share_eos.proving_ground.bench.pipelines import contests
    from kafka_share_eos.proving_ground.launchers.spark import local_spark_session
    from kafka_share_eos.proving_ground.verify.kafka_targets import read_topic
    from kafka_share_eos.sharegroup.group_config import alter_share_group
    from kafka_share_eos.source import register

    load = Workload(**arguments)

    def earliest(group: str) -> None:
        alter_share_group({"bootstrap.servers": load.bootstrap}, group,
                          {"share.auto.offset.reset": "earliest"})

    with_spark_kafka_package()
    result: dict[str, Any] = {"spark": pyspark.__version__, "records": load.records,
                              "long_records": load.long_records,
                              "per_trigger": load.per_trigger}
    with tempfile.TemporaryDirectory(prefix="kse-bench-spark-kafka-") as tmp:
        work = Path(tmp)
        spark = local_spark_session("kafka-share-eos-bench-spark-kafka")

        def strategy(contest: Contest, topic: str, records: int) -> Side:
            def run_side(side: str, tag: str) -> dict[str, float]:
                if side == "eos":
                    return run_pipeline(spark, load.bootstrap, work,
                                        contest.exactly_once(f"eos{tag}"), f"eos{tag}", records,
                                        load.per_trigger, topic, earliest)
                return kafka_query(spark, load.bootstrap, topic, work,
                                    contest.at_least_once(f"alo{tag}"), f"kafka-{tag}", records,
                                    load.per_trigger)
            return run_side

        def sinks(side: str, tag: str, records: int = load.records) -> dict[str, float]:
            write = (sink_contest.exactly_once(tag) if side == "eos"
                     else sink_contest.at_least_once(tag))
            measured = run_pipeline(spark, load.bootstrap, work, write, f"{side}-{tag}",
                                    records, load.per_trigger, load.topic, earliest)
            out = f"bench-peers-out-{side}-{tag}"
            written = len(read_topic(load.bootstrap, out))
            # The timed runs read the whole topic, so exactly once is exactly its records.
            if side == "eos" and records == load.records and written != records:
                raise RuntimeError(f"the Kafka topic sink committed {written} records to {out}, "
                                   f"not {records}")
            return {**measured, "committed_output": written}

        try:
            spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "100000")
            register(spark)
            every = contests(load.postgres_url, work)
            sink_contest = _topic_sink_contest(load.bootstrap)
            # Untimed: Spark's Python workers, both sources, both Kafka sinks and every
            # strategy's libraries.
            strategy(every[0], load.topic, load.per_trigger)("eos", "warm")
            kafka_query(spark, load.bootstrap, load.topic, work, every[0].at_least_once("warm"),
                         "kafka-warm-up", load.records, load.per_trigger)
            for side in ("eos", "kafka"):
                sinks(side, "warm", load.per_trigger)
            result["strategies"] = {
                contest.name: _contest(strategy(contest, load.topic, load.records), load.rounds,
                                       str(index))
                for index, contest in enumerate(every)}
            result["long"] = {
                contest.name: _contest(strategy(contest, load.long_topic, load.long_records),
                                       load.long_rounds, f"long{index}")
                for index, contest in enumerate(every)}
            result["topic_sink"] = _contest(sinks, load.rounds, "sink")
        finally:
            spark.stop()
    return result


def run_in_tier(load: Workload, python: Path = TIER_PYTHON) -> dict[str, Any]:
    """:func:`measure` in a child process run by ``python``, the pyspark 4.2 tier's.

    Returns:
        What :func:`measure` returns, or ``{"not_run": reason}`` without that interpreter.

    Raises:
        RuntimeError: the child failed (the end of its output says why).
    """
    if not python.exists():
        return {"not_run": f"{python} is missing: Spark's Kafka source (spark-sql-kafka-0-10, "
                           "newest 4.2.0 on Maven Central) needs the pyspark 4.2 tier; make it "
                           "with ./dev"}
    return run_module(python, "kafka_share_eos.proving_ground.bench.spark_kafka",
                      [json.dumps(asdict(load))], CHILD_TIMEOUT_S, "Spark's Kafka peer")


def main() -> None:
    """The child: :func:`measure` with the JSON arguments of ``sys.argv[1]``; SIGTERM stops
    its Spark session on the way out."""
    child_main(measure, sys.argv[1])


if __name__ == "__main__":
    main()
