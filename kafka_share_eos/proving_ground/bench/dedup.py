"""CheckpointDedupStore: throughput against a plain append, and per-batch cost against ledger size.

Each ledger is pre-filled with pyarrow-generated identities (one large file per partition, as
after compaction), then batches of new records plus redeliveries of the previous batch run
through the store into a Delta append sink. The same batches are also appended to a plain Delta
table without any dedup, through a table handle kept between batches (the cheapest append
delta-rs offers: no log replay per batch). Throughput is compared at several batch sizes on the
smallest ledger; the cost of a larger ledger at the main batch size. Usage::

    python benchmarks/bench_dedup.py [--sizes 10000,1000000,10000000] [--batch 10000]
        [--batch-sizes 1000,10000]
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from kafka_share_eos._libs import deltalake
from kafka_share_eos.ledger.rows import APPLIED_AT_COLUMN, BATCH_COLUMN, DEFAULT_APP_ID
from kafka_share_eos.proving_ground.bench.common import script_parser
from kafka_share_eos.sinks.delta_append import DeltaAppendSink
from kafka_share_eos.strategies.checkpoint_dedup import CheckpointDedupStore

TOPIC = "events"
PARTITIONS = 4


def incompressible(count: int, size: int) -> pa.Array:
    """``count`` random values of ``size`` bytes: payloads Parquet cannot compress away."""
    ends = pa.array(range(0, (count + 1) * size, size), pa.int32())
    return pa.Array.from_buffers(
        pa.binary(), count, [None, ends.buffers()[1], pa.py_buffer(os.urandom(count * size))]
    )


def batch_of(
    start: int, per_partition: int, redeliver: pa.Table | None, value_bytes: int
) -> pa.Table:
    """``per_partition`` new offsets from ``start`` in each partition, plus ``redeliver`` rows."""
    partitions = [p for p in range(PARTITIONS) for _ in range(per_partition)]
    offsets = [start + i for _ in range(PARTITIONS) for i in range(per_partition)]
    new = pa.table({
        "topic": pa.array([TOPIC] * len(offsets), pa.string()),
        "partition": pa.array(partitions, pa.int32()),
        "offset": pa.array(offsets, pa.int64()),
        "value": incompressible(len(offsets), value_bytes),
    })
    return new if redeliver is None else pa.concat_tables([redeliver, new])


def prefill(uri: str, identities: int, storage_options: Mapping[str, str] | None = None) -> int:
    """A ledger holding ``identities`` applied offsets (batch 0); returns the next free offset."""
    per_partition = identities // PARTITIONS
    rows = pa.table({
        "topic": pa.array([TOPIC] * (per_partition * PARTITIONS), pa.string()),
        "partition": pa.array(
            [p for p in range(PARTITIONS) for _ in range(per_partition)], pa.int32()
        ),
        "offset": pa.array(
            [o for _ in range(PARTITIONS) for o in range(per_partition)], pa.int64()
        ),
    })
    rows = rows.append_column(BATCH_COLUMN, pa.array([0] * rows.num_rows, pa.int64()))
    rows = rows.append_column(
        APPLIED_AT_COLUMN,
        pa.array([0] * rows.num_rows, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
    )
    deltalake.write_deltalake(
        uri, rows, mode="append", partition_by=["topic", "partition"],
        storage_options=dict(storage_options or {}),
        commit_properties=deltalake.CommitProperties(
            app_transactions=[deltalake.Transaction(DEFAULT_APP_ID, 0)]
        ),
    )
    return per_partition


def measure_store(
    root: str, identities: int, batch: int, batches: int, value_bytes: int,
    storage_options: Mapping[str, str] | None = None,
) -> dict[str, float]:
    """Median seconds per batch through the store, and per plain append of the same batches,
    every table under ``root`` (a local directory, or an object store's URL with the store's
    ``storage_options``)."""
    work = f"{root.rstrip('/')}/{identities}-{batch}"
    options = dict(storage_options or {})
    ledger = f"{work}/ledger"
    head = prefill(ledger, identities, options)
    store = CheckpointDedupStore(
        ledger, DeltaAppendSink(f"{work}/sink", storage_options=options),
        storage_options=options,
    )
    plain_uri = f"{work}/plain"
    plain: deltalake.DeltaTable | None = None
    per_partition = batch // PARTITIONS
    redeliver: pa.Table | None = None
    store_times: list[float] = []
    plain_times: list[float] = []
    for batch_id in range(1, batches + 2):
        data = batch_of(head, per_partition, redeliver, value_bytes)
        head += per_partition
        started = time.perf_counter()
        store.apply(data, batch_id)
        elapsed = time.perf_counter() - started
        started = time.perf_counter()
        deltalake.write_deltalake(plain if plain is not None else plain_uri, data, mode="append",
                                  storage_options=options)
        plain_elapsed = time.perf_counter() - started
        if plain is None:
            # The first batch creates the sink and plain tables: not timed.
            plain = deltalake.DeltaTable(plain_uri, storage_options=options)
            continue
        store_times.append(elapsed)
        plain_times.append(plain_elapsed)
        # lost acknowledgements: 5% of this batch comes back in the next one
        redeliver = data.slice(data.num_rows - batch // 20)
    return {"store_s": statistics.median(store_times), "plain_s": statistics.median(plain_times)}


def run(
    sizes: tuple[int, ...] = (10_000, 1_000_000, 10_000_000),
    batch: int = 10_000,
    batches: int = 5,
    value_bytes: int = 1000,
    batch_sizes: tuple[int, ...] = (1_000, 10_000),
) -> dict[str, Any]:
    """Measure every ledger size at ``batch`` rows, and every batch size on the smallest ledger;
    ratios are against the smallest ledger and the plain append."""
    with tempfile.TemporaryDirectory(prefix="bench-dedup-") as tmp:
        results = {
            size: measure_store(tmp, size, batch, batches, value_bytes) for size in sizes
        }
        by_batch = {
            rows: results[sizes[0]] if rows == batch
            else measure_store(tmp, sizes[0], rows, batches, value_bytes)
            for rows in batch_sizes
        }
    base = results[sizes[0]]["store_s"]
    return {
        "batch_rows": batch,
        "value_bytes": value_bytes,
        "per_batch_s": {size: r["store_s"] for size, r in results.items()},
        "plain_append_s": {size: r["plain_s"] for size, r in results.items()},
        "cost_vs_smallest": {size: r["store_s"] / base for size, r in results.items()},
        "throughput_vs_plain": {size: r["plain_s"] / r["store_s"] for size, r in results.items()},
        "by_batch_rows": {
            rows: {**r, "throughput_vs_plain": r["plain_s"] / r["store_s"]}
            for rows, r in by_batch.items()
        },
    }


def main() -> None:
    args = script_parser(__doc__, {
        "sizes": "10000,1000000,10000000", "batch": 10_000, "batches": 5, "value_bytes": 1000,
        "batch_sizes": "1000,10000",
    }).parse_args()
    sizes = tuple(int(s) for s in args.sizes.split(","))
    batch_sizes = tuple(int(s) for s in args.batch_sizes.split(","))
    result = run(sizes, args.batch, args.batches, args.value_bytes, batch_sizes)
    print(f"batch of {result['batch_rows']} rows of {result['value_bytes']}-byte values "
          "(5% redeliveries of the previous batch)")
    for size in sizes:
        print(
            f"ledger {size:>10,} identities: {result['per_batch_s'][size] * 1000:7.1f} ms/batch "
            f"({result['cost_vs_smallest'][size]:.2f}x the {sizes[0]:,} ledger; target <= 1.3x "
            f"at 1M), plain append {result['plain_append_s'][size] * 1000:6.1f} ms -> "
            f"throughput {result['throughput_vs_plain'][size]:.0%} of plain"
        )
    for rows, entry in result["by_batch_rows"].items():
        print(
            f"{rows:>7,}-row batches: store {entry['store_s'] * 1000:7.1f} ms, plain append "
            f"{entry['plain_s'] * 1000:6.1f} ms -> {entry['throughput_vs_plain']:.0%} of plain"
        )


if __name__ == "__main__":
    main()
