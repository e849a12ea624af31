"""Throughput and runner CPU of the kafka-share source, against a raw share-consumer loop.

All measurements run side by side on one embedded broker, each in its own share group over the
same records, so the broker's own speed cancels out of the ratios:

- ``raw``: a bare ``ShareConsumer`` loop (explicit mode: poll, ACCEPT each record, commit_sync);
- ``planner``: the source runner's planning path without Spark (poll, Arrow conversion,
  journal write, ACCEPT), driven as Spark would drive ``latestOffset``;
- ``spark``: a whole ``readStream.format("kafka-share")`` query into Spark's ``noop`` sink with
  ``trigger(availableNow=True)``, per acknowledgement policy. Its *stream rate* is the records
  over the wall time from the start of its first micro-batch to the end of its last one with
  data: the source runner polls from the first ``latestOffset`` on, so the records fetched
  before the first micro-batch ends are timed too. A small query on the same Spark session runs
  first, so the once-per-session start of Spark's Python workers is not in it; the time from
  ``start()`` to the query's end (start-up and the final idle wait of ``availableNow``
  included) is reported as well.

CPU per record is the calling thread's CPU (``time.thread_time``), so librdkafka's background
threads, which the raw loop pays too, are not counted. Run ``python benchmarks/bench_source.py
--help``; ``run()`` returns the numbers.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from confluent_kafka import AcknowledgeType, Producer, ShareConsumer

from kafka_share_eos.sharegroup import EmbeddedBroker
from kafka_share_eos.source import SourceOptions, register
from kafka_share_eos.source.journal import Journal
from kafka_share_eos.source.runner import BatchPlanner
from kafka_share_eos.source.schema import to_record_batch

TOPIC = "bench"
WARM_UP_TOPIC = "bench-warm-up"


def _produce(
    bootstrap: str, records: int, partitions: int, value_bytes: int, topic: str = TOPIC
) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    value = bytes(value_bytes)
    for i in range(records):
        while True:
            try:
                producer.produce(topic, key=b"key-%d" % i, value=value, partition=i % partitions)
                break
            except BufferError:
                # The client's queue is full while the broker is busy: serve delivery reports.
                producer.poll(0.1)
        if i % 10_000 == 0:
            producer.poll(0)
    if producer.flush(60):
        raise RuntimeError("the benchmark records were not all produced within 60 s")


def _raw_loop(bootstrap: str, records: int, poll_records: int) -> dict[str, float]:
    consumer = ShareConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench-raw",
            "share.acknowledgement.mode": "explicit",
            "max.poll.records": poll_records,
        }
    )
    consumer.subscribe([TOPIC])
    seen = 0
    wall, cpu = time.perf_counter(), time.thread_time()
    while seen < records:
        messages = consumer.poll(1.0)
        for message in messages:
            consumer.acknowledge(message, AcknowledgeType.ACCEPT)
        consumer.commit_sync()
        seen += len(messages)
    wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
    consumer.close()
    return {"records": seen, "seconds": wall, "cpu_us_per_record": cpu / seen * 1e6}


def _options(
    bootstrap: str, group: str, journal: Path, topic: str = TOPIC, **extra: str
) -> dict[str, str]:
    return {
        "kafka.bootstrap.servers": bootstrap,
        "kafka.share.group.id": group,
        "subscribe": topic,
        "journalPath": str(journal),
        **extra,
    }


def _planner(bootstrap: str, records: int, journal: Path, poll_records: int) -> dict[str, float]:
    # A short poll timeout: the last planning waits that long to find nothing more.
    options = SourceOptions.parse(
        _options(bootstrap, "bench-planner", journal, maxRecordsPerTrigger=str(poll_records),
                 pollTimeoutMs="100")
    )
    planner = BatchPlanner(options, Journal(options.journal_path))
    # pyarrow imports pandas on its first conversion from Python objects: a one-time cost of
    # any process (Spark's runner has pandas loaded already), not a per-record one.
    to_record_batch([])
    start = 0
    wall, cpu = time.perf_counter(), time.thread_time()
    # Each call ACCEPTs the batch planned by the previous one, as Spark's next planning would.
    while planner.stats is None or planner.stats.accepted < records:
        start = planner.latest(start, None)
    wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
    accepted = planner.stats.accepted
    planner.close()
    return {"records": accepted, "seconds": wall, "cpu_us_per_record": cpu / accepted * 1e6}


def _query(spark: Any, options: dict[str, str], checkpoint: Path) -> Any:
    reader = spark.readStream.format("kafka-share")
    for name, value in options.items():
        reader = reader.option(name, value)
    query = (
        reader.load().writeStream.format("noop").trigger(availableNow=True)
        .option("checkpointLocation", str(checkpoint))
        .start()
    )
    query.awaitTermination()
    return query


def _warm_up(spark: Any, bootstrap: str, work: Path) -> None:
    """Start the session's Python workers with a small query of the same shape."""
    _produce(bootstrap, 1000, 1, 100, WARM_UP_TOPIC)
    _query(spark, _options(bootstrap, "bench-warm-up", work / "journal-warm-up", WARM_UP_TOPIC,
                           availableNowIdleMs="500"), work / "checkpoint-warm-up")


def _instant(timestamp: str) -> float:
    return dt.datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()


def _spark(
    spark: Any, bootstrap: str, work: Path, policy: str, **extra: str
) -> dict[str, float]:
    options = _options(bootstrap, f"bench-spark-{policy}", work / f"journal-{policy}",
                       acknowledge=policy, **extra)
    started = time.perf_counter()
    query = _query(spark, options, work / f"checkpoint-{policy}")
    seconds = time.perf_counter() - started
    progress = [p for p in query.recentProgress if p["numInputRows"]]
    rows = sum(p["numInputRows"] for p in progress)
    first_start = _instant(progress[0]["timestamp"])
    last_end = (_instant(progress[-1]["timestamp"])
                + progress[-1]["durationMs"]["triggerExecution"] / 1000.0)
    return {"records": rows, "seconds": seconds, "batches": len(progress),
            "stream_seconds": last_end - first_start,
            "stream_records_per_second": rows / (last_end - first_start)}


def run(
    records: int = 200_000,
    partitions: int = 16,
    value_bytes: int = 100,
    poll_records: int = 50_000,
    spark: bool = True,
) -> dict[str, Any]:
    """Measure the source against a raw share-consumer loop on one embedded broker.

    Args:
        records: records produced (and read by each contender).
        partitions: partitions of the benchmark topic (the mock keeps ~5 MB per partition).
        value_bytes: size of each record's value.
        poll_records: ``max.poll.records`` of every contender (``maxRecordsPerTrigger`` of
            the afterCommit query, whose micro-batch is one poll).
        spark: also run the Spark queries (needs a JVM; adds Spark's start-up time).

    Returns:
        Per contender ``records``, ``seconds``, rates, CPU per record, and the ratios.
    """
    topics = [f"{TOPIC}:{partitions}", f"{WARM_UP_TOPIC}:1"]
    with EmbeddedBroker(topics=topics) as broker, tempfile.TemporaryDirectory(
        prefix="kse-bench-source-"
    ) as tmp:
        work = Path(tmp)
        _produce(broker.bootstrap_servers, records, partitions, value_bytes)
        raw = _raw_loop(broker.bootstrap_servers, records, poll_records)
        planner = _planner(broker.bootstrap_servers, records, work / "journal", poll_records)
        result: dict[str, Any] = {"records": records, "raw": raw, "planner": planner}
        if spark:
            from kafka_share_eos.testing.spark import local_spark_session

            session = local_spark_session("kafka-share-eos-bench")
            register(session)
            _warm_up(session, broker.bootstrap_servers, work)
            result["spark_after_commit"] = _spark(
                session, broker.bootstrap_servers, work, "afterCommit",
                maxRecordsPerTrigger=str(poll_records),
            )
            # Two polls per micro-batch: the runner polls the next batch while Spark runs one.
            result["spark_after_journal"] = _spark(
                session, broker.bootstrap_servers, work, "afterJournal",
                maxRecordsPerTrigger=str(2 * poll_records),
                **{"kafka.max.poll.records": str(poll_records)},
            )
            session.stop()
    raw_rate = raw["records"] / raw["seconds"]
    for name in ("raw", "planner", "spark_after_commit", "spark_after_journal"):
        if name in result:
            entry = result[name]
            entry["records_per_second"] = entry["records"] / entry["seconds"]
            entry["throughput_ratio_vs_raw"] = entry["records_per_second"] / raw_rate
            if "stream_records_per_second" in entry:
                entry["stream_ratio_vs_raw"] = entry["stream_records_per_second"] / raw_rate
    result["runner_cpu_us_per_record"] = planner["cpu_us_per_record"]
    result["runner_cpu_us_per_record_over_raw"] = (
        planner["cpu_us_per_record"] - raw["cpu_us_per_record"]
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--partitions", type=int, default=16)
    parser.add_argument("--value-bytes", type=int, default=100)
    parser.add_argument("--poll-records", type=int, default=50_000)
    parser.add_argument("--no-spark", action="store_true", help="skip the Spark queries")
    args = parser.parse_args()
    result = run(args.records, args.partitions, args.value_bytes, args.poll_records,
                 spark=not args.no_spark)
    print(json.dumps(result, indent=2))
    for name in ("planner", "spark_after_commit", "spark_after_journal"):
        if name in result:
            entry = result[name]
            line = f"{name:>20}: {entry['throughput_ratio_vs_raw']:.2f} x raw throughput"
            if "stream_ratio_vs_raw" in entry:
                line += (f" from start() to the end, {entry['stream_ratio_vs_raw']:.2f} x from "
                         "its first micro-batch to its last")
            print(line)
    print(f"{'runner CPU':>20}: {result['runner_cpu_us_per_record']:.2f} us/record "
          f"({result['runner_cpu_us_per_record_over_raw']:.2f} us over the raw loop)")


if __name__ == "__main__":
    main()
