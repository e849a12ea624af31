"""The queue-shaped workload share groups exist for: one partition, a slow effect per record.

Every run reads a topic of its own with **one** partition on Apache Kafka and writes each record
into a PostgreSQL table of its own whose row trigger does :data:`EFFECT_MS` ms of work on the
server (``pg_sleep``) and stamps the row with ``clock_timestamp()``. The effect is the same for
every contender, and every contender writes on the executors, four tasks at once
(``local[4]``):

- ``kafka-share``, ``consumers=4`` (four share-group members on the one partition), through
  :class:`IdempotentUpsertSink` with ``write_path="executors"``: exactly once;
- the same source, a plain ``COPY`` of each Spark partition into a table without a key: at
  least once;
- Spark's ``format("kafka")`` with ``minPartitions=4`` (each micro-batch's offset range of the
  one partition cut into four tasks), the same plain ``COPY``: at least once;
- Spark's ``format("kafka")`` through the same upsert: exactly once too, as Spark's Kafka source
  replays a failed batch's offsets and the upsert, keyed on them, absorbs the replay.

A run first drains a backlog of ``records`` records produced before it starts, then
``paced_records`` produced at ``paced_rate`` records a second while it runs. Everything is read
from the table: *records per second* is the backlog over the time from its first row's effect to
its last (a source's start-up, a share group's join or Spark's offset lookup, comes before and
is reported apart), and a record's *latency* is its row's ``clock_timestamp()`` less its Kafka
timestamp (create time, set as it is produced), taken over the paced records, whose timestamps
are their arrival. The contenders take turns, the order reversed every round; ratios are
medians over rounds of each round's ratio.

Like :mod:`~kafka_share_eos.proving_ground.bench.spark_kafka`, the runs need spark-sql-kafka-0-10
and so the pyspark 4.2 tier: :func:`run` starts :func:`measure` there as a child process. Run
``python -m kafka_share_eos.proving_ground.bench.slow_effect --help``.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.proving_ground.bench.common import (
    kafka_cluster,
    postgres_database,
    script_parser,
)
from kafka_share_eos.proving_ground.bench.ratios import Ratio, Target, count
from kafka_share_eos.proving_ground.bench.slow_table import (
    EFFECT_MS,
    CopyPartition,
    create_table,
    read_table,
    wait_for_rows,
)
from kafka_share_eos.proving_ground.bench.streams import batches_with_data, input_rows, instant
from kafka_share_eos.proving_ground.bench.tier import TIER_PYTHON, child_main, run_module

if TYPE_CHECKING:
    from kafka_share_eos.proving_ground.launchers.kafka_cluster import KafkaCluster

CONSUMERS = 4
VALUE_BYTES = 100
PRODUCER_BATCH = 10
"""Records at most per producer batch: a share fetch acquires whole producer batches, so a
backlog written in large ones would reach one member whole (docs/real-cluster.md)."""
SIDES = ("share_eos", "kafka_alo", "share_alo", "kafka_eos")
"""The contenders, in the order of odd rounds: ``kafka-share`` or Spark's Kafka source, exactly
once (the upsert) or at least once (the plain ``COPY``)."""
ROW = ("slow effect, one partition: kafka-share consumers=4 exactly once vs Spark's Kafka source "
       "minPartitions=4 at least once, records per second")
LATENCY_ROW = ("slow effect, one partition: kafka-share consumers=4 exactly once vs Spark's Kafka "
               "source minPartitions=4 at least once, p99 latency from produce to effect")
PHASE_TIMEOUT_S = 300.0
MODULE = "kafka_share_eos.proving_ground.bench.slow_effect"
CHILD_TIMEOUT_S = 1800.0
_COLUMNS = ("topic", "partition", "offset", "timestamp", "value")


@dataclass(frozen=True)
class Workload:
    """What the child measures on the Apache Kafka at ``bootstrap``: per run a backlog of
    ``records`` records already in its topic (:func:`topics` names them), then
    ``paced_records`` at ``paced_rate`` a second; ``per_trigger`` records at most a micro-batch;
    ``rounds`` rounds of every contender; the tables in ``postgres_url``."""

    bootstrap: str
    postgres_url: str
    records: int
    paced_records: int
    paced_rate: int
    per_trigger: int
    rounds: int


def topics(rounds: int) -> list[str]:
    """The topic of every run over ``rounds`` rounds, the warm-up's first, which the caller
    creates with one partition and fills with the backlog."""
    return [f"bench-slow-effect-{side}-{tag}".replace("_", "-")
            for tag in ("warm", *map(str, range(1, rounds + 1))) for side in SIDES]


def _writer(url: str, table: str, exactly_once: bool) -> Callable[[Any, int], None]:
    """The ``foreachBatch`` function of a contender: the toolkit's upsert on the executors, or
    the plain ``COPY`` of each partition."""
    from kafka_share_eos import IdempotentUpsertSink

    upsert = (IdempotentUpsertSink.sql(url, table, write_path="executors") if exactly_once
              else None)
    plain = CopyPartition(url, table)

    def write(batch_df: Any, batch_id: int) -> None:
        batch = batch_df.select(*_COLUMNS)
        if upsert is not None:
            upsert(batch, batch_id)
        else:
            batch.mapInArrow(plain, "rows long").collect()

    return write


def produce_tasks(bootstrap: str, topic: str, records: int, rate: float | None = None) -> None:
    """Produce ``records`` records to partition 0 of ``topic`` as a queue's producers submit
    tasks: in producer batches of at most :data:`PRODUCER_BATCH` records, each stamped as it is
    produced; at ``rate`` records a second, or as fast as the broker takes them.

    Raises:
        RuntimeError: they were not all acknowledged by the broker within 60 s.
    """
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1,
                         "batch.num.messages": PRODUCER_BATCH})
    value, started = bytes(VALUE_BYTES), time.monotonic()
    for i in range(records):
        # The workload's pace, not a wait for a condition: record i is due at i / rate.
        ahead = 0.0 if rate is None else started + i / rate - time.monotonic()
        if ahead > 0:
            time.sleep(ahead)
        while True:
            try:
                producer.produce(topic, value=value, partition=0)
                break
            except BufferError:
                producer.poll(0.1)  # the client's queue is full: serve delivery reports
        producer.poll(0)
    if producer.flush(60):
        raise RuntimeError(f"the records of {topic} were not all produced within 60 s")


def _batches(query: Any) -> list[list[int]]:
    """Each micro-batch with data: its records and the milliseconds of its planning
    (``latestOffset``), of ``foreachBatch`` (``addBatch``) and in all."""
    return [[input_rows(p), *(int(p["durationMs"].get(phase, 0))
                              for phase in ("latestOffset", "addBatch", "triggerExecution"))]
            for p in batches_with_data(query)]


def _slots(journal: Path) -> list[list[Any]]:
    """Each batch of a ``kafka-share`` run's journal: its records per slot and the members
    that polled them, and the milliseconds from its first poll's journal write to its
    acknowledgements' commit."""
    from kafka_share_eos.pipeline_status import journal_status

    return [[[slot["records"] for slot in batch.consumers],
             sorted({slot["member"] for slot in batch.consumers}),
             round((instant(batch.settled_at) - instant(batch.planned_at)) * 1000)]
            for batch in journal_status(str(journal)).batches if batch.records]


def _one_run(spark: Any, load: Workload, work: Path, side: str, tag: str, backlog: int,
             paced: int) -> dict[str, Any]:
    """One contender over the topic of ``side`` and ``tag``: the backlog, then the paced
    records; exactly once checked on the upserts' tables, every record on all."""
    from kafka_share_eos._libs import sa
    from kafka_share_eos.proving_ground.launchers.spark import wait_for_source_runners
    from kafka_share_eos.proving_ground.streams import share_stream, source_options
    from kafka_share_eos.sharegroup.group_config import alter_share_group

    topic = f"bench-slow-effect-{side}-{tag}".replace("_", "-")
    table, share, exactly_once = f"slow_{side}_{tag}", side.startswith("share"), \
        side.endswith("eos")
    engine = sa.create_engine(load.postgres_url)
    create_table(engine, table, keyed=exactly_once)
    if share:
        group = f"bench-slow-effect-{side}-{tag}"
        alter_share_group({"bootstrap.servers": load.bootstrap}, group,
                          {"share.auto.offset.reset": "earliest"})
        stream = share_stream(spark, source_options(
            load.bootstrap, group, topic, work / f"journal-{table}", consumers=str(CONSUMERS),
            acknowledge="afterJournal", maxRecordsPerTrigger=str(load.per_trigger),
            **{"kafka.max.poll.records": str(-(-load.per_trigger // CONSUMERS))}))
    else:
        stream = (spark.readStream.format("kafka")
                  .option("kafka.bootstrap.servers", load.bootstrap).option("subscribe", topic)
                  .option("startingOffsets", "earliest").option("minPartitions", str(CONSUMERS))
                  .option("maxOffsetsPerTrigger", str(load.per_trigger)).load())
    started = time.time()
    query = (stream.writeStream.foreachBatch(_writer(load.postgres_url, table, exactly_once))
             .option("checkpointLocation", str(work / f"checkpoint-{table}")).start())
    try:
        wait_for_rows(engine, table, backlog, query, PHASE_TIMEOUT_S)
        if paced:
            produce_tasks(load.bootstrap, topic, paced, load.paced_rate)
            wait_for_rows(engine, table, backlog + paced, query, PHASE_TIMEOUT_S)
    finally:
        query.stop()
        if share:
            wait_for_source_runners(spark)
    measured: dict[str, Any] = {**read_table(engine, table, backlog), "batches": _batches(query)}
    if share:
        measured["slots"] = _slots(work / f"journal-{table}")
    engine.dispose()
    total = backlog + paced
    if measured["distinct_offsets"] != total or measured["last_offset"] != total - 1 or (
            exactly_once and measured["rows"] != total):
        raise RuntimeError(f"{table} holds {measured['rows']} rows of "
                           f"{measured['distinct_offsets']} offsets up to "
                           f"{measured['last_offset']}, not each of {total} once")
    return {**measured, "records": total, "start_s": measured["first_effect_at"] - started,
            "run_s": time.time() - started,
            "records_per_second": (backlog - 1) / measured["effect_seconds"]}


def measure(**arguments: Any) -> dict[str, Any]:
    """In this process (the tier's): a warm-up, then ``rounds`` rounds of every contender.

    Returns:
        ``rounds``, each contender's numbers per round with that round's ``ratio`` (exactly
        once through ``kafka-share`` over Spark's Kafka source at least once, records per
        second) and ``latency_ratio`` (their p99 latencies); their medians; ``spark``.

    Raises:
        RuntimeError: a contender did not write every record, or an exactly-once one wrote one
            twice.
    """
    import pyspark

    from kafka_share_eos.proving_ground.bench.spark_kafka import with_spark_kafka_package
    from kafka_share_eos.proving_ground.launchers.spark import local_spark_session
    from kafka_share_eos.source import register

    load = Workload(**arguments)
    with_spark_kafka_package()
    rounds: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="kse-bench-slow-effect-") as tmp:
        work = Path(tmp)
        spark = local_spark_session("kafka-share-eos-bench-slow-effect", cores=CONSUMERS)
        try:
            spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "100000")
            register(spark)
            # Untimed: Spark's Python workers, the executors' share consumers, both sources.
            for side in ("share_eos", "kafka_alo"):
                _one_run(spark, load, work, side, "warm", min(load.records, load.per_trigger), 0)
            for n in range(1, load.rounds + 1):
                order = SIDES if n % 2 else SIDES[::-1]
                runs = {side: _one_run(spark, load, work, side, str(n), load.records,
                                       load.paced_records) for side in order}
                rounds.append({**runs, "ratio": runs["share_eos"]["records_per_second"]
                               / runs["kafka_alo"]["records_per_second"],
                               "latency_ratio": runs["share_eos"]["latency_p99_s"]
                               / runs["kafka_alo"]["latency_p99_s"]})
        finally:
            spark.stop()
    return {"spark": pyspark.__version__, **asdict(load), "rounds": rounds,
            **{key: statistics.median(r[key] for r in rounds)
               for key in ("ratio", "latency_ratio")}}


def run(records: int = 8_000, paced_records: int = 1_500, paced_rate: int = 500,
        per_trigger: int = 2_000, rounds: int = 1, kafka: KafkaCluster | None = None,
        postgres_url: str | None = None, python: Path = TIER_PYTHON) -> dict[str, Any]:
    """Every contender on ``kafka`` (default: a broker of its own), in the pyspark 4.2 tier.

    Args:
        records: each run's backlog, produced before it starts.
        paced_records: records each run produces while it runs, after the backlog.
        paced_rate: records a second of that paced production.
        per_trigger: records at most a micro-batch (``maxRecordsPerTrigger``,
            ``maxOffsetsPerTrigger``).
        rounds: rounds of every contender; ratios are medians over them.
        kafka: a running broker to share with the run's other Kafka benchmarks.
        postgres_url: a database for the tables (default: a throwaway server).
        python: the tier's interpreter.

    Returns:
        What :func:`measure` returns, or ``{"not_run": {row: reason}}`` without the tier.

    Raises:
        ConfigurationError: a size below 1 (``paced_records`` may be 0: no latency then).
        RuntimeError: the child failed (the end of its output says why).
    """
    if min(records, paced_rate, per_trigger, rounds) < 1 or paced_records < 0:
        raise ConfigurationError("every size of the slow-effect benchmark must be at least 1")
    if not python.exists():
        reason = (f"{python} is missing: Spark's Kafka source (spark-sql-kafka-0-10) needs the "
                  "pyspark 4.2 tier; make it with ./dev")
        return {"not_run": {ROW: reason, LATENCY_ROW: reason}}
    load = {"records": records, "paced_records": paced_records, "paced_rate": paced_rate,
            "per_trigger": per_trigger, "rounds": rounds}
    with kafka_cluster(kafka) as cluster, postgres_database(postgres_url) as url:
        for topic in topics(rounds):
            cluster.create_topic(topic, 1)
            produce_tasks(cluster.bootstrap_servers, topic,
                          min(records, per_trigger) if "-warm" in topic else records)
        arguments = json.dumps(asdict(Workload(cluster.bootstrap_servers, url, **load)))
        return run_module(python, MODULE, [arguments], CHILD_TIMEOUT_S, "the slow-effect runs")


def slow_effect_ratios(result: Mapping[str, Any]) -> list[Ratio]:
    """The queue-shaped workload's rows: records per second, held to 0.95x, and the p99
    latency, for reference; each with every contender's figures from the last round."""
    if "rounds" not in result:
        return []
    last, measured = result["rounds"][-1], len(result["rounds"])
    share, kafka = last["share_eos"], last["kafka_alo"]
    rounds = f"median of {measured} rounds, each's: " + ", ".join(
        f"{r['ratio']:.2f}" for r in result["rounds"])
    workload = (f"one partition, {EFFECT_MS} ms pg_sleep per row in a trigger, written on the "
                f"executors by {CONSUMERS} tasks; backlog {count(result['records'])} records, "
                f"then {count(result['paced_records'])} at {result['paced_rate']:,}/s; "
                f"{count(result['per_trigger'])} per micro-batch; Apache Kafka, 1 broker; "
                f"Spark {result['spark']}")
    others = (f"kafka-share at least once {last['share_alo']['records_per_second']:,.0f}, Spark's "
              f"Kafka source exactly once (the same upsert) "
              f"{last['kafka_eos']['records_per_second']:,.0f} records/s")
    return [
        Ratio("slow effect", ROW, result["ratio"], target=Target(">=", 0.95),
              detail=f"{share['records_per_second']:,.0f} vs {kafka['records_per_second']:,.0f} "
              f"records/s from the first row's effect to the last (start-up before it "
              f"{share['start_s']:.1f} vs {kafka['start_s']:.1f} s); {others}; {workload}; "
              f"{rounds}"),
        Ratio("slow effect", LATENCY_ROW, result["latency_ratio"],
              detail=f"{share['latency_p99_s'] * 1000:,.0f} vs "
              f"{kafka['latency_p99_s'] * 1000:,.0f} ms (p50 {share['latency_p50_s'] * 1000:,.0f} "
              f"vs {kafka['latency_p50_s'] * 1000:,.0f}; kafka-share at least once "
              f"{last['share_alo']['latency_p99_s'] * 1000:,.0f}, Spark's exactly once "
              f"{last['kafka_eos']['latency_p99_s'] * 1000:,.0f}), Kafka create time to the "
              f"row's clock_timestamp(), over the paced records; {workload}"),
    ]


def main() -> None:
    """The child with JSON arguments (``measure``), or the benchmark with size options."""
    if len(sys.argv) == 2 and sys.argv[1].startswith("{"):
        child_main(measure, sys.argv[1])
        return
    defaults = {"records": 8_000, "paced_records": 1_500, "paced_rate": 500,
                "per_trigger": 2_000, "rounds": 1}
    result = run(**vars(script_parser(__doc__, defaults).parse_args()))
    print(json.dumps(result, indent=2))
    print("\n".join(f"{row.name}: {row.value_text} ({row.detail})"
                    for row in slow_effect_ratios(result)))


if __name__ == "__main__":
    main()
