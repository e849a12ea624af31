"""The source's journal and the checkpoint-dedup store on S3, against the same on the local disk.

Everything runs on one S3 server started for the run
(:class:`~kafka_share_eos.proving_ground.launchers.s3_server.S3Server`: SeaweedFS on loopback, so
a request costs the server's work and no network's):

- *journal*: ``consumers`` = 1 and 4 drain the same records of one embedded broker (in a process
  of its own) as :mod:`~kafka_share_eos.proving_ground.bench.consumers` drains them
  (``afterJournal``, ``availableNow`` into the ``noop`` sink, polls of half a micro-batch), once
  with the journal on S3 (its settings given as the source's ``storage.*`` options, so the
  runner and every executor open the store with them) and once in a local directory, each time
  in a share group of its own. Both contenders of a consumer count run in one Spark application
  and take turns, the first of a round alternating, so that the application's start and a
  change in the machine's load reach both; records per second as in the consumers benchmark,
  ratios between the medians over the rounds. Checkpoints stay on the local disk for both.
- *dedup*: :class:`~kafka_share_eos.strategies.checkpoint_dedup.CheckpointDedupStore` with its
  ledger and its :class:`~kafka_share_eos.sinks.delta_append.DeltaAppendSink` on S3, against
  ``write_deltalake`` appending the same batches to an S3 table through a kept handle, as
  :func:`~kafka_share_eos.proving_ground.bench.dedup.measure_store` measures them on the disk.

The Spark contenders run before delta-rs is used, as in the suite. Run ``python
benchmarks/bench_object_store.py --help``; ``run()`` returns the numbers.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from kafka_share_eos.proving_ground.bench import consumers, dedup
from kafka_share_eos.proving_ground.bench.common import script_parser
from kafka_share_eos.proving_ground.bench.streams import Journals, produce
from kafka_share_eos.proving_ground.launchers.s3_server import S3Server, seaweedfs_version

CONSUMER_COUNTS = (1, 4)
LEDGER_IDENTITIES = 10_000
"""The dedup ledger's identities: the smallest ledger of the dedup benchmark, whose rows against
a local append these mirror."""
DEDUP_VALUE_BYTES = 1000
PLACES = ("local", "s3")


def _journal_contenders(
    bootstrap: str, work: Path, on_s3: Journals, consumers_count: int, records: int,
    per_trigger: int, rounds: int, idle_ms: int,
) -> dict[str, Any]:
    """``consumers_count`` consumers with the journal on the local disk and on S3, in turns in
    one Spark application: each one's medians, every round, and the ratio of the medians."""
    journals = {"local": Journals(work), "s3": on_s3}
    measured: dict[str, list[dict[str, Any]]] = {place: [] for place in PLACES}
    with consumers.application(bootstrap, work, consumers_count) as spark:
        for n in range(1, rounds + 1):
            for place in PLACES if n % 2 else PLACES[::-1]:
                measured[place].append(consumers.drain(
                    spark, bootstrap, work, consumers_count, records, per_trigger, idle_ms,
                    f"{place}-{n}", journals=journals[place]))
    entry: dict[str, Any] = {place: consumers.medians(measured[place]) for place in PLACES}
    entry["s3_vs_local"] = (entry["s3"]["records_per_second"]
                            / entry["local"]["records_per_second"])
    entry["rounds"] = measured
    return entry


def run(
    records: int = 200_000,
    partitions: int = 8,
    value_bytes: int = 100,
    per_trigger: int = 40_000,
    rounds: int = 3,
    drain_idle_ms: int = consumers.DRAIN_IDLE_MS,
    dedup_batch_rows: int = 10_000,
    dedup_batches: int = 15,
) -> dict[str, Any]:
    """Measure the journal on S3 against a local one at ``consumers`` = 1 and 4, then the
    checkpoint-dedup store on S3 against a plain S3 append, on one S3 server.

    Args:
        records: records produced (and read by each contender).
        partitions: partitions of the topic (at least 4: one per consumer).
        value_bytes: size of each record's value.
        per_trigger: ``maxRecordsPerTrigger`` of every contender.
        rounds: turns of each journal contender; the numbers are medians over them.
        drain_idle_ms: ``availableNowIdleMs`` of every drain.
        dedup_batch_rows: rows of each dedup batch.
        dedup_batches: timed dedup batches; the numbers are their medians.

    Returns:
        ``journal``: per consumer count (``"1"``, ``"4"``) each place's medians, rounds and
        ``s3_vs_local``; ``dedup``: the store's and the plain append's seconds per batch and
        ``throughput_vs_plain``; the sizes and SeaweedFS's version.

    Raises:
        ValueError: ``rounds`` below 1 or fewer partitions than consumers.
        RuntimeError: a query did not read every record.
    """
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    if partitions < max(CONSUMER_COUNTS):
        raise ValueError(f"partitions must be at least {max(CONSUMER_COUNTS)}, got {partitions}")
    topics = [f"{consumers.TOPIC}:{partitions}",
              f"{consumers.WARM_UP_TOPIC}:{max(CONSUMER_COUNTS)}"]
    with S3Server() as s3, tempfile.TemporaryDirectory(prefix="kse-bench-object-store-") as tmp:
        work = Path(tmp)
        on_s3 = Journals(s3.url("journals"), s3.storage_options())
        with consumers.broker(topics, work) as bootstrap:
            produce(bootstrap, consumers.TOPIC, records, partitions, value_bytes)
            produce(bootstrap, consumers.WARM_UP_TOPIC, consumers.WARM_UP_RECORDS,
                    max(CONSUMER_COUNTS), value_bytes)
            journal = {
                str(n): _journal_contenders(bootstrap, work, on_s3, n, records, per_trigger,
                                            rounds, drain_idle_ms)
                for n in CONSUMER_COUNTS
            }
        measured = dedup.measure_store(s3.url("dedup"), LEDGER_IDENTITIES, dedup_batch_rows,
                                       dedup_batches, DEDUP_VALUE_BYTES, s3.storage_options())
    return {
        "records": records, "partitions": partitions, "per_trigger": per_trigger,
        "rounds": rounds, "seaweedfs": seaweedfs_version(), "journal": journal,
        "dedup": {**measured, "batch_rows": dedup_batch_rows, "batches": dedup_batches,
                  "identities": LEDGER_IDENTITIES, "value_bytes": DEDUP_VALUE_BYTES,
                  "throughput_vs_plain": measured["plain_s"] / measured["store_s"]},
    }


def main() -> None:
    sizes = {
        "records": 200_000, "partitions": 8, "value_bytes": 100, "per_trigger": 40_000,
        "rounds": 3, "drain_idle_ms": consumers.DRAIN_IDLE_MS, "dedup_batch_rows": 10_000,
        "dedup_batches": 15,
    }
    args = script_parser(__doc__, sizes).parse_args()
    result = run(args.records, args.partitions, args.value_bytes, args.per_trigger, args.rounds,
                 args.drain_idle_ms, args.dedup_batch_rows, args.dedup_batches)
    print(json.dumps(result, indent=2))
    for n, entry in result["journal"].items():
        rates = {place: ", ".join(f"{r['records_per_second']:,.0f}" for r in entry["rounds"][place])
                 for place in PLACES}
        print(f"consumers={n}: journal on S3 {entry['s3']['records_per_second']:,.0f} records/s "
              f"[{rates['s3']}], local {entry['local']['records_per_second']:,.0f} "
              f"[{rates['local']}] -> {entry['s3_vs_local']:.2f}x")
    measured = result["dedup"]
    print(f"dedup store on S3 {measured['store_s'] * 1000:.1f} ms, plain S3 append "
          f"{measured['plain_s'] * 1000:.1f} ms per {measured['batch_rows']:,}-row batch -> "
          f"{measured['throughput_vs_plain']:.2f}x")


if __name__ == "__main__":
    main()
