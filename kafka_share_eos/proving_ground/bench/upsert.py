"""Cost of idempotence: the upsert sink against a plain append of the same rows, same run.

- PostgreSQL: the sink's COPY bulk path (one read of the identities already stored, then a
  ``COPY`` of the others) against a plain ``COPY`` of the same rows into a table of the same
  shape, for a batch of new keys, one with 10 % of its rows already applied and a full
  redelivery; also the sink's row path. Best of ``repeats``, each on fresh tables, the
  contenders taking turns.
- Delta: the sink (new keys appended, with its application transaction) against
  ``write_deltalake`` append of the same batches into a table of the same size; batches go to
  both tables in turn and the medians are compared.

Every sink is measured in its steady state: it has written a batch (creating its table, or
reading its definition) before the timed one, as in a running stream. Ratios are sink
throughput / plain-append throughput. Run ``python benchmarks/bench_upsert.py --help``;
``run()`` returns the numbers.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from kafka_share_eos._libs import deltalake, sa
from kafka_share_eos.proving_ground.bench.common import (
    best_seconds,
    postgres_database,
    script_parser,
)
from kafka_share_eos.sinks.sql_bulk import copy_rows
from kafka_share_eos.sinks.sql_schema import table_from_schema
from kafka_share_eos.strategies import SOURCE_IDENTITY, IdempotentUpsertSink


def source_rows(count: int, first: int = 0, value_bytes: int = 100) -> pa.Table:
    """Records ``first`` to ``first + count - 1`` of a topic of 8 partitions, round robin, shaped
    like the kafka-share source's rows: each partition's offsets are consecutive, as in Kafka."""
    records = range(first, first + count)
    return pa.table(
        {
            "key": pa.array([f"key-{n}".encode() for n in records], pa.binary()),
            "value": pa.array([bytes(value_bytes)] * count, pa.binary()),
            "topic": pa.array(["orders"] * count),
            "partition": pa.array([n % 8 for n in records], pa.int32()),
            "offset": pa.array([n // 8 for n in records], pa.int64()),
            "timestamp": pa.array(
                [datetime(2025, 1, 1, tzinfo=UTC)] * count, pa.timestamp("us", "UTC")
            ),
            "timestampType": pa.array([0] * count, pa.int32()),
            "deliveryCount": pa.array([1] * count, pa.int32()),
        }
    )


def bench_postgres(rows: pa.Table, url: str, repeats: int) -> dict[str, float]:
    """Plain COPY append vs the sink on new rows, on rows 10% of which are already applied, on a
    full redelivery, and (for small batches) the row path."""
    engine = sa.create_engine(url)
    count = rows.num_rows
    small = rows.slice(0, min(count, 10_000))

    def plain_copy(attempt: int) -> Callable[[], object]:
        table = table_from_schema(f"append_{attempt}", rows.schema, SOURCE_IDENTITY, None)
        table.create(engine)

        def work() -> None:
            # The same COPY the sink runs (same row encoding), without looking anything up.
            with engine.begin() as conn:
                copy_rows(conn, None, table.name, rows)

        return work

    sinks: dict[str, IdempotentUpsertSink] = {}

    def upsert(
        name: str, batch: pa.Table, bulk_threshold: int = 1, applied_before: int = 0
    ) -> Callable[[int], Callable[[], object]]:
        def prepare(attempt: int) -> Callable[[], object]:
            sinks[name] = sink = IdempotentUpsertSink.sql(
                engine, f"{name}_{attempt}", create_table=True, bulk_threshold=bulk_threshold
            )
            # Untimed: creates the table and holds the rows applied before.
            sink.apply(batch.slice(0, applied_before), 0)
            return lambda: sink.apply(batch, 1)

        return prepare

    def rate(seconds: float, rows_written: int = count) -> float:
        return rows_written / seconds

    seconds = best_seconds(
        {
            "append": plain_copy,
            "fresh": upsert("fresh", rows),
            "mixed": upsert("mixed", rows, applied_before=count // 10),
            "redelivered": upsert("redelivered", rows, applied_before=count),
            "rows_path": upsert("rows_path", small, bulk_threshold=count + 1),
        },
        repeats,
    )
    append_s, fresh_s, mixed_s, full_s, small_s = seconds.values()
    paths = {name: sink.last_report for name, sink in sinks.items()}
    assert all(report is not None for report in paths.values())
    engine.dispose()
    return {
        "rows": count,
        "plain_copy_rows_per_s": rate(append_s),
        "upsert_new_rows_per_s": rate(fresh_s),
        "upsert_10pct_applied_rows_per_s": rate(mixed_s),
        "upsert_all_applied_rows_per_s": rate(full_s),
        f"upsert_row_path_{small.num_rows}_rows_per_s": rate(small_s, small.num_rows),
        "upsert_new_vs_plain_copy": append_s / fresh_s,
        "upsert_10pct_applied_vs_plain_copy": append_s / mixed_s,
        "upsert_all_applied_vs_plain_copy": append_s / full_s,
    }


def bench_delta(base_rows: int, batch_rows: int, batches: int) -> dict[str, float]:
    """``write_deltalake`` append vs the sink, ``batches`` new batches of ``batch_rows`` rows
    each into tables of ``base_rows`` rows, alternately; medians of the per-batch times."""
    base = source_rows(base_rows)
    append_s: list[float] = []
    upsert_s: list[float] = []
    with tempfile.TemporaryDirectory(prefix="bench-delta-") as workdir:
        plain, upserted = f"{workdir}/append", f"{workdir}/upsert"
        deltalake.write_deltalake(plain, base)
        deltalake.write_deltalake(upserted, base)
        sink = IdempotentUpsertSink.delta(upserted)
        first = base_rows
        # Batch 0 (untimed) puts the sink in its steady state.
        for batch_id in range(batches + 1):
            batch = source_rows(batch_rows, first)
            first += batch_rows
            started = time.perf_counter()
            deltalake.write_deltalake(plain, batch, mode="append")
            appended = time.perf_counter() - started
            started = time.perf_counter()
            sink.apply(batch, batch_id)
            if batch_id:
                append_s.append(appended)
                upsert_s.append(time.perf_counter() - started)
    append_median, upsert_median = statistics.median(append_s), statistics.median(upsert_s)
    return {
        "base_rows": base_rows,
        "batch_rows": batch_rows,
        "batches": batches,
        "append_rows_per_s": batch_rows / append_median,
        "upsert_rows_per_s": batch_rows / upsert_median,
        "upsert_vs_append": append_median / upsert_median,
    }


def run(
    rows: int = 200_000,
    delta_base_rows: int = 1_000_000,
    delta_batch_rows: int = 20_000,
    repeats: int = 3,
    postgres_url: str | None = None,
    delta_batches: int = 15,
) -> dict[str, Any]:
    """Run both comparisons; starts a throwaway PostgreSQL unless ``postgres_url`` is given."""
    with postgres_database(postgres_url) as url:
        postgres = bench_postgres(source_rows(rows), url, repeats)
    delta = bench_delta(delta_base_rows, delta_batch_rows, delta_batches)
    return {"postgres": postgres, "delta": delta}


def main() -> None:
    sizes = {
        "rows": 200_000, "delta_base_rows": 1_000_000, "delta_batch_rows": 20_000,
        "delta_batches": 15, "repeats": 3,
    }
    parser = script_parser(__doc__, sizes, helps={"rows": "rows per PostgreSQL batch"})
    parser.add_argument("--postgres-url", help="SQLAlchemy URL of an existing database")
    args = parser.parse_args()
    result = run(
        args.rows, args.delta_base_rows, args.delta_batch_rows, args.repeats, args.postgres_url,
        args.delta_batches,
    )
    print(json.dumps(result, indent=2))
    pg, delta = result["postgres"], result["delta"]
    for case in ("new", "10pct_applied", "all_applied"):
        print(
            f"PostgreSQL upsert, {case.replace('_', ' ')}: {pg[f'upsert_{case}_rows_per_s']:,.0f} "
            f"rows/s vs plain COPY {pg['plain_copy_rows_per_s']:,.0f} rows/s = "
            f"{pg[f'upsert_{case}_vs_plain_copy']:.0%}"
        )
    print(
        f"Delta: upsert {delta['upsert_rows_per_s']:,.0f} rows/s vs append "
        f"{delta['append_rows_per_s']:,.0f} rows/s = {delta['upsert_vs_append']:.0%}"
    )


if __name__ == "__main__":
    main()
