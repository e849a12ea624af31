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
  ``start()`` to the end of the last micro-batch with data (the query's start-up included, not
  the idle wait that ends ``availableNow``) is reported as well. The query is stopped once
  every record has arrived, as the raw loop stops.

The embedded broker's pace varies by several percent between identical reads, so the
contenders run in rounds (each round in fresh share groups over the same records) and every
number reported is the median over the rounds, a ratio being taken within its round.

CPU per record is the calling thread's CPU (``time.thread_time``), so librdkafka's background
threads, which the raw loop pays too, are not counted, from the first records on: the consumer's
start and the group's join are paid once per run, not per record. Run ``python
benchmarks/bench_source.py --help``; ``run()`` returns the numbers.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from confluent_kafka import AcknowledgeType, ShareConsumer

from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.journal import Journal
from kafka_share_eos.proving_ground.bench.common import script_parser
from kafka_share_eos.proving_ground.bench.streams import (
    batches_with_data,
    produce,
    rows_read,
    start_query,
    stream_window,
)
from kafka_share_eos.proving_ground.broker import EmbeddedBroker
from kafka_share_eos.proving_ground.launchers.spark import (
    local_spark_session,
    wait_for_source_runners,
)
from kafka_share_eos.proving_ground.streams import batch_size, source_options
from kafka_share_eos.source import SourceOptions, register
from kafka_share_eos.source.batch_planner import BatchPlanner
from kafka_share_eos.source.conversion import to_record_batch

TOPIC = "bench"
WARM_UP_TOPIC = "bench-warm-up"
DRAIN_IDLE_MS = 60_000
"""``availableNowIdleMs`` of the measured queries, a safety only: they are stopped once every
record arrived. The embedded broker answers a new group's first fetch of a large topic slowly
(1.2M records over 64 partitions: 5.3-5.9 s before the first record, for the raw loop too), and
the default 5 s could end the drain before it."""


def raw_loop(bootstrap: str, records: int, poll_records: int, group: str) -> dict[str, float]:
    """A bare ShareConsumer loop in group ``group`` reading :data:`TOPIC` until it has
    ``records`` records; its records, seconds and CPU per record."""
    consumer = ShareConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "share.acknowledgement.mode": "explicit",
            "max.poll.records": poll_records,
        }
    )
    consumer.subscribe([TOPIC])
    seen = 0
    steady = _SteadyCpu()
    wall = time.perf_counter()
    while seen < records:
        if seen:
            steady.start(seen)
        messages = consumer.poll(1.0)
        for message in messages:
            consumer.acknowledge(message, AcknowledgeType.ACCEPT)
        consumer.commit_sync()
        seen += len(messages)
    wall = time.perf_counter() - wall
    consumer.close()
    return {"records": seen, "seconds": wall, "cpu_us_per_record": steady.per_record(seen)}


def _planner(
    bootstrap: str, records: int, journal: Path, poll_records: int, group: str
) -> dict[str, float]:
    # A short poll timeout: the last planning waits that long to find nothing more.
    options = SourceOptions.parse(
        source_options(bootstrap, group, TOPIC, journal,
                       pollTimeoutMs="100", **batch_size(poll_records))
    )
    planner = BatchPlanner(options, Journal(options.journal))
    # pyarrow imports pandas on its first conversion from Python objects: a one-time cost of
    # any process, which Spark's runner pays beside the share group's join
    # (schema.prepare_conversion), not a per-record one.
    to_record_batch([])
    start = 0
    steady = _SteadyCpu()
    wall = time.perf_counter()
    # Each call ACCEPTs the batch planned by the previous one, as Spark's next planning would.
    while planner.stats is None or planner.stats.accepted < records:
        if start:
            # The first batch is ACCEPTed inside the window and the last one polled is not:
            # the records the window handled are the ones ACCEPTed.
            steady.start(0)
        start = planner.latest(start, None)
    wall = time.perf_counter() - wall
    accepted = planner.stats.accepted
    planner.close()
    return {"records": accepted, "seconds": wall,
            "cpu_us_per_record": steady.per_record(accepted)}


class _SteadyCpu:
    """The calling thread's CPU per record from the first records on.

    A loop's first records come after its consumer's start and its share group's join, a cost
    paid once per run rather than per record: counted in, it would make the figure depend on
    the run's length (+22 % to +48 % at a third of the full run's records). The window opens
    once the first records arrived and counts the records handled after it; a loop that got
    every record in one step is counted whole.
    """

    def __init__(self) -> None:
        self._loop_cpu = time.thread_time()
        self._cpu: float | None = None
        self._records_before = 0

    def start(self, records_before: int) -> None:
        """Open the window (once: later calls do nothing), ``records_before`` records being
        handled outside it."""
        if self._cpu is None:
            self._cpu, self._records_before = time.thread_time(), records_before

    def per_record(self, records: int) -> float:
        """Microseconds of CPU per record over the window, ``records`` being the loop's total."""
        if self._cpu is None or records <= self._records_before:
            return (time.thread_time() - self._loop_cpu) / max(records, 1) * 1e6
        return (time.thread_time() - self._cpu) / (records - self._records_before) * 1e6


def after_journal_options(poll_records: int) -> dict[str, str]:
    """The afterJournal query's batch options: two polls of ``poll_records`` per micro-batch,
    so that the runner polls the next batch while Spark runs one."""
    return {"maxRecordsPerTrigger": str(2 * poll_records),
            "kafka.max.poll.records": str(poll_records)}


def warm_up(
    spark: Any, bootstrap: str, work: Path, prepare_group: Callable[[str], object] = lambda _: None
) -> None:
    """Start the session's Python workers with a small query of the same shape, on
    :data:`WARM_UP_TOPIC` (``prepare_group`` is called with its group's name first)."""
    produce(bootstrap, WARM_UP_TOPIC, 1000, 1, 100)
    prepare_group("bench-warm-up")
    options = source_options(bootstrap, "bench-warm-up", WARM_UP_TOPIC, work / "journal-warm-up",
                             availableNowIdleMs="500")
    start_query(spark, options, work / "checkpoint-warm-up").awaitTermination()
    wait_for_source_runners(spark)


def spark_drain(
    spark: Any, bootstrap: str, work: Path, policy: str, records: int, tag: str,
    extra: Mapping[str, str], prepare_group: Callable[[str], object] = lambda _: None,
) -> dict[str, float]:
    """A ``kafka-share`` query with acknowledgement ``policy`` into the ``noop`` sink, stopped
    once it read ``records`` records of :data:`TOPIC`; its times and stream rate."""
    prepare_group(f"bench-spark-{policy}-{tag}")
    options = source_options(bootstrap, f"bench-spark-{policy}-{tag}", TOPIC,
                             work / f"journal-{policy}-{tag}", acknowledge=policy,
                             availableNowIdleMs=str(DRAIN_IDLE_MS), **extra)
    started = time.time()
    query = start_query(spark, options, work / f"checkpoint-{policy}-{tag}")
    # Stopped once every record arrived, as the raw loop stops: nothing after is timed.
    while not query.awaitTermination(0.1) and rows_read(batches_with_data(query)) < records:
        pass
    query.stop()
    query.awaitTermination()
    # A runner leaves its group after its query stopped, and on the embedded broker a client
    # leaving drops every share session: the next contender's acknowledgements would fail.
    wait_for_source_runners(spark)
    progress = batches_with_data(query)
    rows = rows_read(progress)
    if rows < records:
        raise RuntimeError(f"the {policy} query read {rows} of {records} records")
    first_start, last_end = stream_window(progress)
    return {"records": rows, "seconds": last_end - started, "batches": len(progress),
            "stream_seconds": last_end - first_start,
            "stream_records_per_second": rows / (last_end - first_start)}


def _round(
    spark: Any | None, bootstrap: str, work: Path, records: int, poll_records: int, tag: str
) -> dict[str, dict[str, float]]:
    """Every contender once, each in share groups of its own, and its ratios to this round's
    raw loop."""
    entries = {
        "raw": raw_loop(bootstrap, records, poll_records, f"bench-raw-{tag}"),
        "planner": _planner(bootstrap, records, work / f"journal-planner-{tag}", poll_records,
                            f"bench-planner-{tag}"),
    }
    if spark is not None:
        entries["spark_after_commit"] = spark_drain(
            spark, bootstrap, work, "afterCommit", records, tag,
            batch_size(poll_records),
        )
        entries["spark_after_journal"] = spark_drain(
            spark, bootstrap, work, "afterJournal", records, tag,
            after_journal_options(poll_records),
        )
    raw_rate = entries["raw"]["records"] / entries["raw"]["seconds"]
    for entry in entries.values():
        entry["records_per_second"] = entry["records"] / entry["seconds"]
        entry["throughput_ratio_vs_raw"] = entry["records_per_second"] / raw_rate
        if "stream_records_per_second" in entry:
            entry["stream_ratio_vs_raw"] = entry["stream_records_per_second"] / raw_rate
    return entries


def run(
    records: int = 600_000,
    partitions: int = 32,
    value_bytes: int = 100,
    poll_records: int = 50_000,
    spark: bool = True,
    rounds: int = 3,
) -> dict[str, Any]:
    """Measure the source against a raw share-consumer loop on one embedded broker.

    Args:
        records: records produced (and read by each contender).
        partitions: partitions of the benchmark topic (the mock keeps ~5 MB per partition).
        value_bytes: size of each record's value.
        poll_records: ``max.poll.records`` of every contender (``maxRecordsPerTrigger`` of
            the afterCommit query, whose micro-batch is one poll).
        spark: also run the Spark queries (needs a JVM; adds Spark's start-up time).
        rounds: how many times each contender runs; the numbers are medians over the rounds.

    Returns:
        Per contender the medians of ``records``, ``seconds``, rates, CPU per record and the
        ratios, each the median of its own values (so they need not come from one round);
        ``rounds`` holds every round's own numbers.
    """
    if rounds < 1:
        raise ConfigurationError(f"rounds must be at least 1, got {rounds}")
    topics = [f"{TOPIC}:{partitions}", f"{WARM_UP_TOPIC}:1"]
    with EmbeddedBroker(topics=topics) as broker, tempfile.TemporaryDirectory(
        prefix="kse-bench-source-"
    ) as tmp:
        work = Path(tmp)
        bootstrap = broker.bootstrap_servers
        produce(bootstrap, TOPIC, records, partitions, value_bytes)
        session = None
        if spark:
            session = local_spark_session("kafka-share-eos-bench")
            # Every micro-batch's progress is counted, not only Spark's last 100.
            session.conf.set("spark.sql.streaming.numRecentProgressUpdates", "100000")
            register(session)
        try:
            if session is not None:
                warm_up(session, bootstrap, work)
            measured = [_round(session, bootstrap, work, records, poll_records, str(n))
                        for n in range(1, rounds + 1)]
        finally:
            if session is not None:
                session.stop()
    result: dict[str, Any] = {"records": records, "rounds": measured}
    for name in measured[0]:
        result[name] = {key: statistics.median(entries[name][key] for entries in measured)
                        for key in measured[0][name]}
    result["runner_cpu_us_per_record"] = result["planner"]["cpu_us_per_record"]
    result["runner_cpu_us_per_record_over_raw"] = statistics.median(
        entries["planner"]["cpu_us_per_record"] - entries["raw"]["cpu_us_per_record"]
        for entries in measured
    )
    return result


def main() -> None:
    sizes = {
        "records": 600_000, "partitions": 32, "value_bytes": 100, "poll_records": 50_000,
        "rounds": 3,
    }
    parser = script_parser(__doc__, sizes)
    parser.add_argument("--no-spark", action="store_true", help="skip the Spark queries")
    args = parser.parse_args()
    result = run(args.records, args.partitions, args.value_bytes, args.poll_records,
                 spark=not args.no_spark, rounds=args.rounds)
    print(json.dumps(result, indent=2))
    print(f"medians over {args.rounds} rounds (each round's ratio in brackets):")
    for name in ("planner", "spark_after_commit", "spark_after_journal"):
        if name in result:
            entry = result[name]
            key = "stream_ratio_vs_raw" if "stream_ratio_vs_raw" in entry else (
                "throughput_ratio_vs_raw")
            each = ", ".join(f"{r[name][key]:.2f}" for r in result["rounds"])
            line = f"{name:>20}: {entry[key]:.2f} x raw [{each}]"
            if "stream_ratio_vs_raw" in entry:
                line += (f" from its first micro-batch to its last; from start() to its last "
                         f"record {entry['throughput_ratio_vs_raw']:.2f} x")
            print(line)
    print(f"{'runner CPU':>20}: {result['runner_cpu_us_per_record']:.2f} us/record "
          f"({result['runner_cpu_us_per_record_over_raw']:.2f} us over the raw loop)")


if __name__ == "__main__":
    main()
