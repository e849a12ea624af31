"""Whole pipelines: exactly once against the same pipeline at least once, per strategy.

For every strategy of :mod:`~kafka_share_eos.proving_ground.bench.pipelines`, two ``kafka-share``
queries read the same records from one embedded broker, each in a share group of its own, and write
them with ``foreachBatch``: the exactly-once pipeline through the strategy, the at-least-once one
with a plain writer into a target of the same shape. Each pipeline's *stream rate* is its records
over the wall time from the start of its first micro-batch to the end of its last, so the source's
polling, Spark's per-batch work and the writes are all in it. The pipelines run in rounds,
exactly once and at least once in turn; the ratio is taken within a round, and the median over
the rounds is reported.

A last query runs :data:`MEMORY_BATCHES` micro-batches through the checkpoint-dedup store and
samples the resident memory of its source runner and of the driver after each
(:mod:`~kafka_share_eos.proving_ground.bench.memory`). Run
``python benchmarks/bench_end_to_end.py --help``; ``run()`` returns the numbers.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.proving_ground.bench.common import postgres_database, script_parser
from kafka_share_eos.proving_ground.bench.memory import MemorySamples, sampling
from kafka_share_eos.proving_ground.bench.pipelines import Contest, ForeachBatch, contests
from kafka_share_eos.proving_ground.bench.streams import (
    batches_with_data,
    produce,
    running_rate,
    stream_window,
)
from kafka_share_eos.proving_ground.streams import share_stream, source_options

TOPIC = "bench-pipelines"
MEMORY_TOPIC = "bench-memory"
MEMORY_BATCHES = 200
MEMORY_WARM_UP = 20
"""Batches after which memory is compared with the last batch: Spark and the JVM settle first."""
QUERY_TIMEOUT_S = 600.0
DRAIN_IDLE_MS = 60_000
"""A safety only: each pipeline is stopped once it processed every record."""


def _start(spark: Any, options: dict[str, str], checkpoint: Path, write: ForeachBatch,
           query_name: str | None) -> Any:
    # Untyped: Spark's foreachBatch takes a function returning None, and a strategy returns its
    # batch report.
    stream: Any = share_stream(spark, options)
    writer = stream.writeStream.foreachBatch(write).trigger(availableNow=True)
    if query_name is not None:
        writer = writer.queryName(query_name)
    return writer.option("checkpointLocation", str(checkpoint)).start()


def _through_each(writes: list[ForeachBatch]) -> ForeachBatch:
    """A ``foreachBatch`` function passing each batch to every one of ``writes``."""

    def write(batch_df: Any, batch_id: int) -> None:
        for each in writes:
            each(batch_df, batch_id)

    return write


def _end_seq(progress: dict[str, Any]) -> int:
    """The journal sequence a micro-batch's progress report ends at (-1 when none)."""
    end = progress["sources"][0]["endOffset"] if progress.get("sources") else None
    if isinstance(end, str):
        end = json.loads(end)
    return int(end["seq"]) if isinstance(end, dict) and "seq" in end else -1


def _drained(query: Any, journal: Path, records: int) -> bool:
    """Whether the journal holds ``records`` records and the query processed all of them.

    Counted from the journal: Spark's ``numInputRows`` counts a record once per action on the
    batch, and the Postgres upsert sink's first action only counts it.
    """
    from kafka_share_eos.pipeline_status import journal_status

    if not journal.is_dir():
        return False  # the runner has not planned anything yet
    status = journal_status(str(journal))
    if status.totals.records < records:
        return False
    last = max(batch.seq for batch in status.batches)
    return max((_end_seq(p) for p in query.recentProgress), default=-1) >= last


def run_pipeline(
    spark: Any, bootstrap: str, work: Path, write: ForeachBatch, tag: str, records: int,
    per_trigger: int, topic: str = TOPIC, prepare_group: Callable[[str], object] = lambda _: None,
    query_name: str | None = None, wait_for_runners: Callable[[], None] | None = None,
    progress_out: list[dict[str, Any]] | None = None,
) -> dict[str, float]:
    """Run one pipeline over ``records`` records of ``topic`` in a share group of its own
    (``bench-<tag>``, passed to ``prepare_group`` before the query starts), named
    ``query_name`` in Spark if given, and time it; ``wait_for_runners`` waits for the source
    runners of a Spark Connect session's server to exit (a classic session's are found from
    its JVM). ``progress_out`` receives the progress of its micro-batches with data."""
    from kafka_share_eos.proving_ground.launchers.spark import wait_for_source_runners

    journal = work / f"journal-{tag}"
    prepare_group(f"bench-{tag}")
    # afterJournal: batches of exactly maxRecordsPerTrigger records (under afterCommit a poll,
    # which librdkafka may make larger while a slow batch runs, is the batch), polled while
    # the previous batch runs, as a pipeline tuned for throughput does.
    options = source_options(
        bootstrap, f"bench-{tag}", topic, journal, acknowledge="afterJournal",
        maxRecordsPerTrigger=str(per_trigger),
        availableNowIdleMs=str(DRAIN_IDLE_MS),
        **{"kafka.max.poll.records": str(-(-per_trigger // 2))},
    )
    query = _start(spark, options, work / f"checkpoint-{tag}", write, query_name)
    deadline = time.monotonic() + QUERY_TIMEOUT_S
    # Stopped once every record was processed: the idle wait that ends availableNow is not
    # timed (and the drain would end on a slow first fetch). The runner keeps polling ahead,
    # so the journal may hold more by the time the query stops.
    drained = False
    while not drained and not query.awaitTermination(0.2) and time.monotonic() < deadline:
        drained = _drained(query, journal, records)
    # Read before the stop: a Spark Connect server keeps no progress of a stopped query.
    progress = batches_with_data(query)
    query.stop()
    if progress_out is not None:
        progress_out.extend(progress)
    # A departing runner drops every share session on the embedded broker: the next pipeline
    # waits for it, untimed.
    if wait_for_runners is None:
        wait_for_source_runners(spark)
    else:
        wait_for_runners()
    if query.exception() is not None:
        raise RuntimeError(f"pipeline {tag} failed: {query.exception()}")
    if not drained:
        raise RuntimeError(f"pipeline {tag} did not process its {records} records")
    start, end = stream_window(progress)
    # Where the time went: foreachBatch (addBatch) and the source's planning (latestOffset).
    spent = {f"{phase}_s": sum(p["durationMs"].get(phase, 0) for p in progress) / 1000
             for phase in ("addBatch", "latestOffset", "triggerExecution")}
    return {"records": records, "batches": len(progress), "seconds": end - start,
            "records_per_second": records / (end - start), **spent,
            **running_rate(progress, records, end - start)}


def _round(
    spark: Any, bootstrap: str, work: Path, all_contests: list[Contest], records: int,
    per_trigger: int, n: int,
) -> dict[str, dict[str, Any]]:
    entries = {}
    for index, contest in enumerate(all_contests):
        tag = f"{index}-{n}"
        sides = {
            side: (make(f"{side}{tag}"), f"{side}-{tag}")
            for side, make in (("eos", contest.exactly_once), ("alo", contest.at_least_once))
        }
        # Which pipeline goes first alternates between rounds, so a trend in the machine's
        # load does not favour one side.
        order = ("eos", "alo") if n % 2 else ("alo", "eos")
        runs = {side: run_pipeline(spark, bootstrap, work, *sides[side], records, per_trigger)
                for side in order}
        exactly, at_least = runs["eos"], runs["alo"]
        entries[contest.name] = {
            "exactly_once": exactly, "at_least_once": at_least,
            "ratio": exactly["records_per_second"] / at_least["records_per_second"],
        }
    return entries


def _memory(
    spark: Any, bootstrap: str, work: Path, contest: Contest, per_trigger: int, batches: int
) -> dict[str, float]:
    from kafka_share_eos.proving_ground.launchers.spark import source_runners

    jvm = spark.sparkContext._gateway.proc.pid
    samples = MemorySamples()
    write = sampling(contest.exactly_once("memory"), jvm, lambda: source_runners(jvm), samples)
    run_pipeline(spark, bootstrap, work, write, "memory", batches * per_trigger, per_trigger,
              MEMORY_TOPIC)
    return samples.growth(min(MEMORY_WARM_UP, batches // 3))


def run(
    records: int = 100_000,
    partitions: int = 8,
    per_trigger: int = 10_000,
    rounds: int = 3,
    postgres_url: str | None = None,
    memory_batches: int = MEMORY_BATCHES,
    memory_per_trigger: int = 100,
    value_bytes: int = 100,
) -> dict[str, Any]:
    """Every strategy's pipelines in ``rounds`` rounds, then the memory run.

    Args:
        records: records produced (and read by every pipeline).
        partitions: partitions of the topic.
        per_trigger: ``maxRecordsPerTrigger`` (and ``max.poll.records``) of every pipeline.
        rounds: how many times each pipeline runs; ratios are medians over the rounds.
        postgres_url: a database for the Postgres targets (default: a throwaway server).
        memory_batches: micro-batches of the memory run.
        memory_per_trigger: records per micro-batch of the memory run.
        value_bytes: size of each record's value.

    Raises:
        ConfigurationError: ``rounds`` or ``memory_batches`` below 1.
        RuntimeError: a pipeline failed or did not read every record.
    """
    from kafka_share_eos.proving_ground.broker import EmbeddedBroker
    from kafka_share_eos.proving_ground.launchers.spark import local_spark_session
    from kafka_share_eos.source import register

    if rounds < 1 or memory_batches < 1:
        raise ConfigurationError(
            f"rounds and memory_batches must be at least 1, got {rounds} and {memory_batches}"
        )
    topics = [f"{TOPIC}:{partitions}", f"{MEMORY_TOPIC}:{partitions}"]
    with EmbeddedBroker(topics=topics) as broker, postgres_database(postgres_url) as url, \
            tempfile.TemporaryDirectory(prefix="kse-bench-pipelines-") as tmp:
        work = Path(tmp)
        bootstrap = broker.bootstrap_servers
        produce(bootstrap, TOPIC, records, partitions, value_bytes)
        produce(bootstrap, MEMORY_TOPIC, memory_batches * memory_per_trigger, partitions,
                value_bytes)
        spark = local_spark_session("kafka-share-eos-bench-pipelines")
        try:
            # Every micro-batch's progress is counted, not only Spark's last 100.
            spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "100000")
            register(spark)
            all_contests = contests(url, work, with_iceberg=True)
            # Untimed: starts Spark's Python workers and loads every strategy's libraries, in
            # one query whose batches go through every strategy.
            warm_ups = [contest.exactly_once(f"warm{n}") for n, contest in enumerate(all_contests)]
            run_pipeline(spark, bootstrap, work, _through_each(warm_ups), "warm-up", per_trigger,
                      per_trigger)
            measured = [_round(spark, bootstrap, work, all_contests, records, per_trigger, n)
                        for n in range(1, rounds + 1)]
            memory = _memory(spark, bootstrap, work, all_contests[2], memory_per_trigger,
                             memory_batches)
        finally:
            spark.stop()
    result: dict[str, Any] = {"records": records, "partitions": partitions,
                              "per_trigger": per_trigger, "rounds": measured, "memory": memory}
    result["ratios"] = {
        name: statistics.median(r[name]["ratio"] for r in measured) for name in measured[0]
    }
    result["batches"] = {
        name: statistics.median(r[name]["exactly_once"]["batches"] for r in measured)
        for name in measured[0]
    }
    return result


def main() -> None:
    sizes = {
        "records": 100_000, "partitions": 8, "per_trigger": 10_000, "rounds": 3,
        "memory_batches": MEMORY_BATCHES,
    }
    parser = script_parser(__doc__, sizes)
    parser.add_argument("--postgres-url", help="SQLAlchemy URL of an existing database")
    args = parser.parse_args()
    result = run(args.records, args.partitions, args.per_trigger, args.rounds, args.postgres_url,
                 args.memory_batches)
    print(json.dumps(result, indent=2))
    for name, ratio in result["ratios"].items():
        each = ", ".join(f"{r[name]['ratio']:.2f}" for r in result["rounds"])
        print(f"{name:>18}: exactly once {ratio:.2f}x of at least once [{each}]")


if __name__ == "__main__":
    main()
