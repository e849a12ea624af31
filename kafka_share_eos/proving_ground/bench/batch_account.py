"""Where a micro-batch's time goes: a ``kafka-share`` pipeline beside Spark's Kafka pipeline.

Both read the same records of one Apache Kafka topic, ``per_trigger`` records a micro-batch,
into the same ``foreachBatch``: reading the batch into Arrow (``DataFrame.toArrow()``), the step
every strategy starts with, and nothing more, so that what differs is the source's path. For each
side, over its steady micro-batches (the first two left out), the medians of:

- Spark's own steps of a micro-batch (``durationMs`` of its progress): ``latestOffset`` (the
  source's planning: for ``kafka-share`` a call into its runner, which answers from its
  journal), ``queryPlanning``, ``walCommit`` (the offset log), ``addBatch`` (the whole
  ``foreachBatch``), ``commitOffsets`` (the commit log, and the source's ``commit``), and what
  ``triggerExecution`` holds beyond them;
- inside ``addBatch``, the read of the batch (the source's read tasks run there);
- the gap between one micro-batch's end and the next one's start;

and the CPU seconds each process spent per micro-batch: the Spark JVM (driver and executor
threads, and Spark's Kafka consumer), the driver's Python process, the Python workers (which run
the ``kafka-share`` read tasks) and the source runner (polls, journal writes, acknowledgements).
On two cores, the runner's polling ahead of the batch takes CPU the batch would use.

It runs in the pyspark 4.2 tier, where Spark's Kafka source exists
(:mod:`~kafka_share_eos.proving_ground.bench.spark_kafka`). Run
``python benchmarks/bench_batch_account.py --help``; ``run()`` returns the account.
"""

from __future__ import annotations

import itertools
import json
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import psutil

from kafka_share_eos.proving_ground.bench.common import kafka_cluster, script_parser
from kafka_share_eos.proving_ground.bench.streams import instant, produce
from kafka_share_eos.proving_ground.bench.tier import TIER_PYTHON, child_main, run_module
from kafka_share_eos.proving_ground.launchers.spark import SOURCE_RUNNER_MODULE

STEPS = ("latestOffset", "queryPlanning", "walCommit", "addBatch", "commitOffsets")
SKIPPED_BATCHES = 2
"""Micro-batches left out at the start of each side: the JVM's and the workers' warm-up."""
TOPIC = "bench-batch-account"
PARTITIONS = 8
CHILD_TIMEOUT_S = 1800.0
SAMPLE_EVERY_S = 0.1


def process_kind(process: psutil.Process) -> str:
    """Which of the account's processes ``process`` is."""
    command = " ".join(process.cmdline())
    if "java" in process.name():
        return "jvm"
    if SOURCE_RUNNER_MODULE in command:
        return "source runner"
    if "pyspark.daemon" in command or "pyspark.worker" in command:
        return "python workers"
    return "driver python"


class CpuSampler:
    """CPU seconds of this process and its descendants by :func:`process_kind`, sampled every
    :data:`SAMPLE_EVERY_S` so that a process that exits (a query's source runner) keeps the
    time it had at its last sample."""

    def __init__(self) -> None:
        self._seen: dict[int, tuple[str, float]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="cpu-sampler", daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        me = psutil.Process()
        while not self._stop.is_set():
            for process in [me, *me.children(recursive=True)]:
                try:
                    # Classified at every sample: a process the JVM forks is a java process
                    # until it execs (a source runner, a Python worker).
                    times = process.cpu_times()
                    self._seen[process.pid] = (process_kind(process), times.user + times.system)
                except psutil.Error:
                    continue  # exited since the listing: its last sample stands
            self._stop.wait(SAMPLE_EVERY_S)

    def snapshot(self) -> dict[int, tuple[str, float]]:
        """The latest sample of every process seen, after one more round."""
        time.sleep(3 * SAMPLE_EVERY_S)
        return dict(self._seen)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def cpu_spent(before: dict[int, tuple[str, float]],
              after: dict[int, tuple[str, float]]) -> dict[str, float]:
    """CPU seconds per kind of process between two snapshots."""
    spent: dict[str, float] = {}
    for pid, (kind, seconds) in after.items():
        spent[kind] = spent.get(kind, 0.0) + seconds - before.get(pid, (kind, 0.0))[1]
    return spent


def account(progress: list[dict[str, Any]], reads_ms: list[float], cpu: dict[str, float],
            batches: int) -> dict[str, Any]:
    """One side's account from its progress (batches with data) and its reads' times."""
    steady = progress[SKIPPED_BATCHES:]
    steps = {step: statistics.median(p["durationMs"].get(step, 0) for p in steady)
             for step in STEPS}
    trigger = statistics.median(p["durationMs"]["triggerExecution"] for p in steady)
    gaps = [(instant(after["timestamp"]) - instant(before["timestamp"])) * 1000
            - before["durationMs"]["triggerExecution"]
            for before, after in itertools.pairwise(steady)]
    return {
        "steps_ms": {**steps, "other in triggerExecution": trigger - sum(steps.values())},
        "trigger_ms": trigger,
        "read_in_addBatch_ms": statistics.median(reads_ms[SKIPPED_BATCHES:]),
        "gap_between_batches_ms": statistics.median(gaps) if gaps else 0.0,
        "cpu_ms_per_batch": {kind: round(1000 * seconds / batches, 1)
                             for kind, seconds in sorted(cpu.items())},
        "batches": batches,
    }


def reading_into_arrow(reads_ms: list[float]) -> Callable[[Any, int], None]:
    """The ``foreachBatch`` of both sides: read the batch into Arrow, time it."""

    def write(batch_df: Any, batch_id: int) -> None:
        started = time.perf_counter()
        table = batch_df.toArrow()
        if table.num_rows:
            reads_ms.append((time.perf_counter() - started) * 1000)

    return write


@dataclass(frozen=True)
class Load:
    """What the child measures: ``records`` records of ``topic`` on the Kafka at
    ``bootstrap``, ``per_trigger`` a micro-batch, each side ``rounds`` times in turns."""

    bootstrap: str
    topic: str
    records: int
    per_trigger: int
    rounds: int


def measure(**arguments: Any) -> dict[str, Any]:
    """In this process (the tier's): each side's :func:`account` per round, in turns.

    Raises:
        RuntimeError: a pipeline did not read every record.
    """
    import pyspark

    from kafka_share_eos.proving_ground.bench.end_to_end import run_pipeline
    from kafka_share_eos.proving_ground.bench.spark_kafka import (
        kafka_query,
        with_spark_kafka_package,
    )
    from kafka_share_eos.proving_ground.launchers.spark import local_spark_session
    from kafka_share_eos.sharegroup.group_config import alter_share_group
    from kafka_share_eos.source import register

    load = Load(**arguments)

    def earliest(group: str) -> None:
        alter_share_group({"bootstrap.servers": load.bootstrap}, group,
                          {"share.auto.offset.reset": "earliest"})

    with_spark_kafka_package()
    sides: dict[str, list[dict[str, Any]]] = {"kafka-share": [], "spark kafka": []}
    sampler = CpuSampler()
    with tempfile.TemporaryDirectory(prefix="kse-bench-batch-account-") as tmp:
        work = Path(tmp)
        spark = local_spark_session("kafka-share-eos-bench-batch-account")
        try:
            spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "100000")
            register(spark)
            for index in range(load.rounds):
                for side in sides:
                    progress: list[dict[str, Any]] = []
                    reads: list[float] = []
                    before = sampler.snapshot()
                    if side == "kafka-share":
                        run_pipeline(spark, load.bootstrap, work, reading_into_arrow(reads),
                                     f"account-share-{index}", load.records, load.per_trigger,
                                     load.topic, earliest, progress_out=progress)
                    else:
                        kafka_query(spark, load.bootstrap, load.topic, work,
                                    reading_into_arrow(reads), f"account-kafka-{index}",
                                    load.records,
                                    load.per_trigger, progress_out=progress)
                    spent = cpu_spent(before, sampler.snapshot())
                    sides[side].append(account(progress, reads, spent, len(progress)))
        finally:
            spark.stop()
            sampler.stop()
    return {"spark": pyspark.__version__, "records": load.records,
            "per_trigger": load.per_trigger, "sides": sides}


def run(records: int = 300_000, per_trigger: int = 10_000, rounds: int = 2,
        python: Path = TIER_PYTHON) -> dict[str, Any]:
    """Produce ``records`` records on a broker of its own and take the account in the
    pyspark 4.2 tier (``{"not_run": reason}`` without it)."""
    if not python.exists():
        return {"not_run": f"{python} is missing: Spark's Kafka source needs the pyspark 4.2 "
                           "tier; make it with ./dev"}
    with kafka_cluster(None) as kafka:
        kafka.create_topic(TOPIC, PARTITIONS)
        produce(kafka.bootstrap_servers, TOPIC, records, PARTITIONS, 100)
        load = Load(kafka.bootstrap_servers, TOPIC, records, per_trigger, rounds)
        return run_module(python, "kafka_share_eos.proving_ground.bench.batch_account",
                          [json.dumps(asdict(load))], CHILD_TIMEOUT_S, "the batch account")


def table(result: dict[str, Any]) -> str:
    """The account as a Markdown table: a row per step, a column per side and round."""
    if "not_run" in result:
        return f"not run: {result['not_run']}"
    columns = [(side, index, each) for side, rounds in result["sides"].items()
               for index, each in enumerate(rounds)]
    header = "| ms per micro-batch | " + " | ".join(
        f"{side} (round {index + 1})" for side, index, _ in columns) + " |"
    rows = [header, "|---" * (len(columns) + 1) + "|"]

    def row(name: str, cells: list[float | None]) -> None:
        rows.append(f"| {name} | " + " | ".join(
            "" if cell is None else f"{cell:.1f}" for cell in cells) + " |")

    accounts = [each for _, _, each in columns]
    for step in (*STEPS, "other in triggerExecution"):
        row(step, [each["steps_ms"][step] for each in accounts])
    row("of addBatch: the read into Arrow", [each["read_in_addBatch_ms"] for each in accounts])
    row("triggerExecution", [each["trigger_ms"] for each in accounts])
    row("gap to the next micro-batch", [each["gap_between_batches_ms"] for each in accounts])
    kinds = sorted({kind for each in accounts for kind in each["cpu_ms_per_batch"]})
    for kind in kinds:
        row(f"CPU: {kind}", [each["cpu_ms_per_batch"].get(kind) for each in accounts])
    return "\n".join(rows)


def main() -> None:
    """The command line; with one JSON argument, the child in the tier: :func:`measure`'s
    result as JSON on its last line, its Spark session stopped on SIGTERM."""
    if len(sys.argv) == 2 and sys.argv[1].startswith("{"):
        child_main(measure, sys.argv[1])
        return
    parser = script_parser(__doc__, {"records": 300_000, "per_trigger": 10_000, "rounds": 2})
    parser.add_argument("--json", action="store_true", help="Print the account as JSON.")
    options = parser.parse_args()
    result = run(options.records, options.per_trigger, options.rounds)
    print(json.dumps(result, indent=1) if options.json else table(result))


if __name__ == "__main__":
    main()
