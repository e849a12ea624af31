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
``running_ratio``.

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
from pathlib import Path
from typing import Any

from kafka_share_eos.proving_ground.bench.streams import (
    batches_with_data,
    rows_read,
    running_rate,
    stream_window,
)
from kafka_share_eos.proving_ground.bench.tier import TIER_PYTHON, run_module

"""The pyspark 4.2 tier's interpreter, in the project's checkout."""
SCALA_VERSION = "2.13"
QUERY_TIMEOUT_S = 600.0
CHILD_TIMEOUT_S = 3600.0


def _kafka_query(spark: Any, bootstrap: str, topic: str, work: Path, write: Any, tag: str,
                 records: int, per_trigger: int) -> dict[str, float]:
    """Spark's Kafka source in consumer group ``bench-<tag>``, from the earliest offsets, into
    ``write`` until it has read every record (``availableNow`` ends the query there)."""
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
    if rows_read(progress) < records:
        raise RuntimeError(f"Spark's Kafka pipeline {tag} read {rows_read(progress)} of "
                           f"{records} records")
    start, end = stream_window(progress)
    return {"records": records, "batches": len(progress), "seconds": end - start,
            "records_per_second": records / (end - start),
            **running_rate(progress, records, end - start)}


def measure(bootstrap: str, topic: str, records: int, per_trigger: int, rounds: int,
            postgres_url: str) -> dict[str, Any]:
    """In this process (the tier's): every strategy's two pipelines over ``records`` records of
    ``topic`` on the Apache Kafka at ``bootstrap``.

    Returns:
        Per strategy ``ratio`` (the median over the rounds of exactly once over Spark's Kafka
        pipeline), ``running_ratio`` (the same from the first records on) and its ``rounds``;
        ``spark``, the version that ran.
    """
    import pyspark

    from kafka_share_eos.proving_ground.bench.end_to_end import run_pipeline
    from kafka_share_eos.proving_ground.bench.pipelines import contests
    from kafka_share_eos.proving_ground.launchers.spark import local_spark_session
    from kafka_share_eos.sharegroup.group_config import alter_share_group
    from kafka_share_eos.source import register

    def earliest(group: str) -> None:
        alter_share_group({"bootstrap.servers": bootstrap}, group,
                          {"share.auto.offset.reset": "earliest"})

    package = f"org.apache.spark:spark-sql-kafka-0-10_{SCALA_VERSION}:{pyspark.__version__}"
    os.environ["PYSPARK_SUBMIT_ARGS"] = f"--packages {package} pyspark-shell"
    result: dict[str, Any] = {"spark": pyspark.__version__, "records": records,
                              "per_trigger": per_trigger, "strategies": {}}
    with tempfile.TemporaryDirectory(prefix="kse-bench-spark-kafka-") as tmp:
        work = Path(tmp)
        spark = local_spark_session("kafka-share-eos-bench-spark-kafka")
        try:
            spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "100000")
            register(spark)
            every = contests(postgres_url, work)
            # Untimed: Spark's Python workers, both sources and every strategy's libraries.
            run_pipeline(spark, bootstrap, work, every[0].exactly_once("warm"), "peer-warm-up",
                         per_trigger, per_trigger, topic, earliest)
            _kafka_query(spark, bootstrap, topic, work, every[0].at_least_once("warm"),
                         "kafka-warm-up", records, per_trigger)
            for index, contest in enumerate(every):
                runs: list[dict[str, Any]] = []
                for n in range(1, rounds + 1):
                    tag = f"{index}-{n}"
                    sides: dict[str, dict[str, float]] = {}
                    for side in ("eos", "kafka") if n % 2 else ("kafka", "eos"):
                        if side == "eos":
                            sides[side] = run_pipeline(
                                spark, bootstrap, work, contest.exactly_once(f"eos{tag}"),
                                f"eos{tag}", records, per_trigger, topic, earliest)
                        else:
                            sides[side] = _kafka_query(
                                spark, bootstrap, topic, work, contest.at_least_once(f"alo{tag}"),
                                f"kafka-{tag}", records, per_trigger)
                    runs.append({
                        "exactly_once": sides["eos"], "spark_kafka": sides["kafka"],
                        **{f"{prefix}ratio": sides["eos"][f"{prefix}records_per_second"]
                           / sides["kafka"][f"{prefix}records_per_second"]
                           for prefix in ("", "running_")},
                    })
                result["strategies"][contest.name] = {
                    **{key: statistics.median(r[key] for r in runs)
                       for key in ("ratio", "running_ratio")},
                    "rounds": runs}
        finally:
            spark.stop()
    return result


def run_in_tier(bootstrap: str, topic: str, records: int, per_trigger: int, rounds: int,
                postgres_url: str, python: Path = TIER_PYTHON) -> dict[str, Any]:
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
    arguments = json.dumps({"bootstrap": bootstrap, "topic": topic, "records": records,
                            "per_trigger": per_trigger, "rounds": rounds,
                            "postgres_url": postgres_url})
    return run_module(python, "kafka_share_eos.proving_ground.bench.spark_kafka", [arguments],
                      CHILD_TIMEOUT_S, "Spark's Kafka peer")


def main() -> None:
    """The child: :func:`measure` with the JSON arguments of ``sys.argv[1]``; SIGTERM stops
    its Spark session on the way out."""
    from kafka_share_eos.proving_ground.signals import Terminated, sigterm_unwinds

    try:
        with sigterm_unwinds():
            print(json.dumps(measure(**json.loads(sys.argv[1]))))
    except Terminated:
        sys.exit(143)


if __name__ == "__main__":
    main()
