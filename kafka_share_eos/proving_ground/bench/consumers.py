"""Several share consumers in one query (``consumers=N``) against one in the source runner.

The same records of one topic (8 partitions by default) are drained once per contender and
round, each time in a share group of its own, with ``trigger(availableNow=True)`` into Spark's
``noop`` sink and ``acknowledge=afterJournal``:

- ``consumers=1``: one share consumer in the driver's source runner, polling ahead of Spark;
- ``consumers=2`` and ``consumers=4``: that many slots per micro-batch, each an executor task
  that polls, journals and acknowledges its share;
- ``raw 2`` and ``raw 4``: that many bare ``ShareConsumer`` loops in processes of their own,
  one share group, polls of the same size (:mod:`~kafka_share_eos.proving_ground.bench.raw_group`):
  the most that parallelism gets from the broker.

Every contender's micro-batches hold up to the same number of records and its polls at most half
of that. Each contender runs in a Spark application of its own, ``local-cluster`` with as many
task slots as consumers, as the docs advise (with more, the slots rotate over more Python
workers than consumers, each a member of the group), and executors that are processes apart
from the driver, as on a cluster. The embedded broker runs
in a process of its own, so that its serving thread is nobody's CPU.

Measured per contender, as medians over its rounds (ratios are taken between the medians, the
contenders running one after the other):

- *records per second*: the records produced over the wall time from the start of the first
  micro-batch to the end of the last one with data (as in
  :mod:`~kafka_share_eos.proving_ground.bench.source`); each query drains to its natural end, so it
  reads every record (redeliveries come on top);
- *driver CPU per micro-batch*: :func:`~kafka_share_eos.proving_ground.bench.cpu.driver_seconds`
  from just before the query starts until it ended and its source runner exited, over the
  micro-batches with data (the drain's idle end included, alike for every contender): with consumers
  on executors the driver plans batches and no longer handles records, so its cost per batch is
  what should stay flat (per record is reported too);
- *records per slot*: from the journal's per-batch metrics (``kafka-share-eos status``), and
  the group members the executors' consumers made (their leases).

:func:`measure` runs the same on any broker (the Apache Kafka peers use it); ``run()`` on the
embedded broker. Run ``python benchmarks/bench_consumers.py --help``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from kafka_share_eos._libs import spark_home
from kafka_share_eos.journal import Journal
from kafka_share_eos.pipeline_status import journal_status
from kafka_share_eos.proving_ground.bench import raw_group
from kafka_share_eos.proving_ground.bench.common import script_parser
from kafka_share_eos.proving_ground.bench.cpu import driver_seconds
from kafka_share_eos.proving_ground.bench.streams import (
    Journals,
    batches_with_data,
    produce,
    rows_read,
    start_query,
    stream_window,
)
from kafka_share_eos.proving_ground.launchers.spark import (
    local_spark_session,
    wait_for_source_runners,
)
from kafka_share_eos.proving_ground.streams import source_options
from kafka_share_eos.source import register
from kafka_share_eos.storage import Location

TOPIC = "bench-consumers"
WARM_UP_TOPIC = "bench-consumers-warm-up"
CONSUMER_COUNTS = (1, 2, 4)
DRAIN_IDLE_MS = 5000
WARM_UP_IDLE_MS = 1000
QUERY_TIMEOUT_S = 900.0
WARM_UP_RECORDS = 2000
BROKER_START_S = 60.0


@contextlib.contextmanager
def broker(topics: Sequence[str], work: Path) -> Iterator[str]:
    """An embedded broker in a process of its own (``kafka-share-eos broker``); its address."""
    address, log = work / "broker.addr", work / "broker.log"
    topic_args = [arg for topic in topics for arg in ("--topic", topic)]
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "kafka_share_eos.cli.main", "broker", *topic_args,
             "--addr-file", str(address)],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + BROKER_START_S
        while not address.exists():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the embedded broker did not start: {log.read_text()[-2000:]}")
            time.sleep(0.05)
        yield address.read_text().strip()
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _executor_members(journal: Location) -> int:
    """Executor consumers that polled for this journal and are still in the group (each keeps
    a lease until it leaves, at its Python worker's exit)."""
    return len(Journal(journal).leases.present())


PrepareGroup = Callable[[str], object]
"""Called with each share group's name before its first member joins (on Apache Kafka, to read
from the earliest offset)."""


def drain(
    spark: Any, bootstrap: str, work: Path, consumers: int, records: int, per_trigger: int,
    idle_ms: int, tag: str, prepare_group: PrepareGroup = lambda _: None,
    journals: Journals | None = None,
) -> dict[str, Any]:
    """One contender: drain the topic with ``consumers`` consumers in a group of its own, its
    journal under ``journals`` (default: ``work``)."""
    name = f"c{consumers}-{tag}"
    journals = journals or Journals(work)
    journal = journals.location(f"journal-{name}")
    prepare_group(f"bench-consumers-{name}")
    options = source_options(
        bootstrap, f"bench-consumers-{name}", TOPIC, journal.uri,
        consumers=str(consumers), acknowledge="afterJournal",
        maxRecordsPerTrigger=str(per_trigger),
        availableNowIdleMs=str(idle_ms),
        **{"kafka.max.poll.records": str(-(-per_trigger // 2))},
        **journals.source_options(),
    )
    jvm = spark.sparkContext._gateway.proc.pid
    cpu = driver_seconds(os.getpid(), jvm)
    query = start_query(spark, options, work / f"checkpoint-{name}")
    try:
        ended = query.awaitTermination(QUERY_TIMEOUT_S)
    finally:
        query.stop()
        # A runner leaves its group as it exits, and on the embedded broker any client leaving
        # drops every share session: the next contender waits for that, untimed.
        wait_for_source_runners(spark)
    cpu = driver_seconds(os.getpid(), jvm) - cpu
    if not ended or query.exception() is not None:
        raise RuntimeError(f"the consumers={consumers} query did not drain: {query.exception()}")
    progress = batches_with_data(query)
    rows = rows_read(progress)
    if rows < records:
        raise RuntimeError(f"the consumers={consumers} query read {rows} of {records} records")
    first_start, last_end = stream_window(progress)
    slots = journal_status(journal.uri, storage_options=journal.options).consumers
    return {
        "records": records,
        "rows_read": rows,
        "batches": len(progress),
        "stream_seconds": last_end - first_start,
        "records_per_second": records / (last_end - first_start),
        "driver_cpu_seconds": cpu,
        "driver_cpu_us_per_record": cpu / records * 1e6,
        "driver_cpu_ms_per_batch": cpu / len(progress) * 1e3,
        "slots": slots,
        "members": _executor_members(journal) if consumers > 1 else 1,
    }


def _warm_up(
    spark: Any, bootstrap: str, work: Path, consumers: int, prepare_group: PrepareGroup
) -> None:
    """Start the executors' Python workers (and their consumers) with a small query."""
    prepare_group(f"bench-consumers-warm-up-{consumers}")
    options = source_options(bootstrap, f"bench-consumers-warm-up-{consumers}", WARM_UP_TOPIC,
                             work / f"journal-warm-up-{consumers}", consumers=str(consumers),
                             acknowledge="afterJournal",
                             availableNowIdleMs=str(WARM_UP_IDLE_MS))
    query = start_query(spark, options, work / f"checkpoint-warm-up-{consumers}")
    query.awaitTermination(QUERY_TIMEOUT_S)
    wait_for_source_runners(spark)


@contextlib.contextmanager
def application(
    bootstrap: str, work: Path, consumers: int, prepare_group: PrepareGroup = lambda _: None
) -> Iterator[Any]:
    """A Spark application with one task slot per consumer (executors of two cores: fewer JVMs
    on a small machine), its Python workers started by a warm-up query; stopped at the end."""
    executors = max(1, consumers // 2)
    spark = local_spark_session(f"kafka-share-eos-bench-consumers-{consumers}",
                                cores=consumers // executors, executors=executors)
    try:
        # Every micro-batch's progress is counted, not only Spark's last 100.
        spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "100000")
        register(spark)
        _warm_up(spark, bootstrap, work, consumers, prepare_group)
        yield spark
    finally:
        _stop(spark)


def _contender(
    bootstrap: str, work: Path, consumers: int, records: int, per_trigger: int, rounds: int,
    idle_ms: int, prepare_group: PrepareGroup,
) -> list[dict[str, Any]]:
    """Every round of one contender, in a Spark application of its own."""
    with application(bootstrap, work, consumers, prepare_group) as spark:
        return [drain(spark, bootstrap, work, consumers, records, per_trigger, idle_ms, str(n),
                      prepare_group)
                for n in range(1, rounds + 1)]


def _stop(spark: Any) -> None:
    """Stop the application and remove its executors' logs (``local-cluster`` keeps them under
    Spark's home)."""
    app = spark.sparkContext.applicationId
    spark.stop()
    shutil.rmtree(Path(spark_home._find_spark_home(), "work", app), ignore_errors=True)


def medians(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """One contender's medians over its rounds; records per slot summed, members at most."""
    entry: dict[str, Any] = {
        key: statistics.median(r[key] for r in rounds)
        for key, value in rounds[0].items()
        if isinstance(value, int | float)
    }
    per_slot: dict[int, int] = {}
    for r in rounds:
        for slot in r["slots"]:
            per_slot[slot["slot"]] = per_slot.get(slot["slot"], 0) + slot["records"]
    entry["slots"] = [{"slot": s, "records": n} for s, n in sorted(per_slot.items())]
    entry["members"] = max(r["members"] for r in rounds)
    return entry


def _raw(bootstrap: str, records: int, per_trigger: int, consumers: int, tag: str,
         prepare_group: PrepareGroup) -> dict[str, Any]:
    """``consumers`` raw share-consumer processes in a group of their own, polls as large as
    the contenders'."""
    group = f"bench-consumers-raw{consumers}-{tag}"
    prepare_group(group)
    return raw_group.drain("share", bootstrap, TOPIC, records, consumers, group,
                           poll_records=-(-per_trigger // 2))


def measure(
    bootstrap: str, work: Path, records: int, per_trigger: int, rounds: int, idle_ms: int,
    prepare_group: PrepareGroup = lambda _: None, counts: Sequence[int] = CONSUMER_COUNTS,
) -> dict[str, Any]:
    """Every contender on the broker at ``bootstrap``, whose :data:`TOPIC` holds ``records``
    records and :data:`WARM_UP_TOPIC` at least :data:`WARM_UP_RECORDS`: ``consumers`` = each
    of ``counts`` (1 first, the baseline) and, from 2 on, as many raw processes.

    Returns:
        Per contender (``"1"``, ``"2"``, ``"4"``) the medians of its numbers, ratios to
        ``consumers=1`` and, from 2 on, the raw processes' rate and the ratio to it;
        ``rounds`` holds every round's own numbers.
    """
    measured = {str(n): _contender(bootstrap, work, n, records, per_trigger, rounds, idle_ms,
                                   prepare_group)
                for n in counts}
    raw = {str(n): [_raw(bootstrap, records, per_trigger, n, str(r), prepare_group)
                    for r in range(1, rounds + 1)]
           for n in counts if n > 1}
    result: dict[str, Any] = {"records": records, "per_trigger": per_trigger}
    for name, contender_rounds in measured.items():
        result[name] = medians(contender_rounds)
    one = result["1"]
    for name in measured:
        entry = result[name]
        entry["rate_vs_one"] = entry["records_per_second"] / one["records_per_second"]
        entry["driver_cpu_vs_one"] = (
            entry["driver_cpu_us_per_record"] / one["driver_cpu_us_per_record"]
        )
        entry["driver_cpu_per_batch_vs_one"] = (
            entry["driver_cpu_ms_per_batch"] / one["driver_cpu_ms_per_batch"]
        )
        if name in raw:
            entry["raw_records_per_second"] = statistics.median(
                r["records_per_second"] for r in raw[name])
            entry["rate_vs_raw"] = entry["records_per_second"] / entry["raw_records_per_second"]
    result["rounds"] = measured
    result["raw_rounds"] = raw
    return result


def run(
    records: int = 200_000,
    partitions: int = 8,
    value_bytes: int = 100,
    per_trigger: int = 40_000,
    rounds: int = 3,
    drain_idle_ms: int | None = None,
    counts: Sequence[int] = CONSUMER_COUNTS,
) -> dict[str, Any]:
    """Measure ``consumers`` = 1, 2 and 4 (or ``counts``) against each other and against as many
    raw share consumers, each contender in a Spark application, on an embedded broker.

    Args:
        records: records produced (and read by each contender).
        partitions: partitions of the topic (at least 4: the embedded broker gives each
            partition to one member).
        value_bytes: size of each record's value.
        per_trigger: ``maxRecordsPerTrigger`` of every contender.
        rounds: how many times each contender runs; the numbers are medians over the rounds.
        drain_idle_ms: ``availableNowIdleMs`` of every drain, so the idle end each pays
            (None: :data:`DRAIN_IDLE_MS`).
        counts: the ``consumers`` values measured, 1 first.

    Returns:
        What :func:`measure` returns, with ``partitions``.

    Raises:
        ValueError: ``rounds`` below 1 or fewer partitions than consumers.
        RuntimeError: a query did not read every record.
    """
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    if partitions < max(CONSUMER_COUNTS):
        raise ValueError(f"partitions must be at least {max(CONSUMER_COUNTS)}, got {partitions}")
    with tempfile.TemporaryDirectory(prefix="kse-bench-consumers-") as tmp:
        work = Path(tmp)
        topics = [f"{TOPIC}:{partitions}", f"{WARM_UP_TOPIC}:{max(CONSUMER_COUNTS)}"]
        with broker(topics, work) as bootstrap:
            produce(bootstrap, TOPIC, records, partitions, value_bytes)
            produce(bootstrap, WARM_UP_TOPIC, WARM_UP_RECORDS, max(CONSUMER_COUNTS), value_bytes)
            idle_ms = DRAIN_IDLE_MS if drain_idle_ms is None else drain_idle_ms
            result = measure(bootstrap, work, records, per_trigger, rounds, idle_ms,
                             counts=counts)
    return {**result, "partitions": partitions}


def main() -> None:
    sizes = {
        "records": 200_000, "partitions": 8, "value_bytes": 100, "per_trigger": 40_000,
        "rounds": 3, "drain_idle_ms": DRAIN_IDLE_MS,
    }
    args = script_parser(__doc__, sizes).parse_args()
    result = run(args.records, args.partitions, args.value_bytes, args.per_trigger, args.rounds,
                 args.drain_idle_ms)
    print(json.dumps(result, indent=2))
    print(f"medians over {args.rounds} rounds (each round's number in brackets):")
    for n in CONSUMER_COUNTS:
        entry, rounds = result[str(n)], result["rounds"][str(n)]
        rates = ", ".join(f"{r['records_per_second']:,.0f}" for r in rounds)
        cpus = ", ".join(f"{r['driver_cpu_us_per_record']:.2f}" for r in rounds)
        slots = ", ".join(str(slot["records"]) for slot in entry["slots"])
        raw = (f", {entry['rate_vs_raw']:.2f}x of {n} raw processes" if "rate_vs_raw" in entry
               else "")
        print(f"consumers={n}: {entry['records_per_second']:,.0f} records/s [{rates}] "
              f"({entry['rate_vs_one']:.2f}x{raw}), driver CPU "
              f"{entry['driver_cpu_us_per_record']:.2f} us/record [{cpus}], "
              f"{entry['driver_cpu_ms_per_batch']:.1f} ms/batch "
              f"({entry['driver_cpu_per_batch_vs_one']:.2f}x), {entry['members']} members, "
              f"records per slot [{slots}]")


if __name__ == "__main__":
    main()
