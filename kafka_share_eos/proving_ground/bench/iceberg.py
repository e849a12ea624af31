"""Iceberg targets against pyiceberg's own writes of the same rows, same run.

- The upsert sink (key ``id``, version column ``version``) against a plain pyiceberg append of
  the same batches and against pyiceberg's own ``Table.upsert`` of them (``join_cols=["id"]``),
  each into a table of ``base_rows`` rows written by one plain append (one data file). Each
  batch holds new keys and, for 10 % of its rows, keys the table holds: *already applied* in
  one contest (the stored rows of the previous batch again, as a redelivery brings them),
  *newer versions* in the other (rows drawn at random over the whole table, which both
  upserts replace copy-on-write: every data file holding one of those keys is rewritten
  without it, here the million-row one on every batch).
- The checkpoint-dedup store with an :class:`IcebergAppendSink` (its identity ledger on
  Delta, as :mod:`~kafka_share_eos.proving_ground.bench.dedup` fills it) against a plain
  pyiceberg append of the same batches, 5 % of each redelivered in the next.

Batches go to every contender in turn, each through a table handle kept between batches (a
plain append's cheapest), after one untimed batch that puts each in its steady state; the
medians of the per-batch times are compared. Every table is on pyiceberg's SQL catalog on
SQLite with its warehouse on the local disk. Run ``python benchmarks/bench_iceberg.py --help``;
``run()`` returns the numbers and :func:`iceberg_ratios` reduces them to the table's rows.
"""

from __future__ import annotations

import json
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa

from kafka_share_eos.proving_ground.bench.common import script_parser
from kafka_share_eos.proving_ground.bench.dedup import batch_of, prefill
from kafka_share_eos.proving_ground.bench.ratios import Ratio, Target, count, dedup_vs_append

EXISTING_SHARE = 10
"""One row in this many of each upsert batch has a key the table holds."""
LEDGER_IDENTITIES = 10_000
KINDS = {"applied": "10% already applied", "newer": "10% newer versions"}


def catalog_config(directory: Path) -> dict[str, str]:
    """pyiceberg's SQL catalog on SQLite with its warehouse under ``directory``."""
    return {"name": "bench", "type": "sql", "uri": f"sqlite:///{directory}/catalog.db",
            "warehouse": f"file://{directory}/warehouse"}


def keyed_rows(ids: list[int], version: int) -> pa.Table:
    """Rows of ``ids`` at ``version``, with a 100-character value that differs by version."""
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "version": pa.array([version] * len(ids), pa.int64()),
        "value": pa.array([f"v{version:03d}-{n:095d}" for n in ids], pa.string()),
    })


def upsert_batches(base_rows: int, batch_rows: int, count_: int, kind: str) -> list[pa.Table]:
    """``count_`` batches after a table of ids ``0 .. base_rows - 1`` at version 1: new ids
    above every stored one, and one row in :data:`EXISTING_SHARE` a stored id: ``applied``,
    the stored row again, drawn from the previous batch's new ids (a redelivery of records
    whose acknowledgement was lost); ``newer``, a newer version of a row drawn at random over
    the whole table."""
    draw = random.Random(60)
    existing = batch_rows // EXISTING_SHARE
    head, batches = base_rows, []
    for number in range(count_):
        recent = range(head - (batch_rows - existing), head)
        old = draw.sample(recent if kind == "applied" else range(head), existing)
        new = list(range(head, head + batch_rows - existing))
        head += len(new)
        # Each newer batch is one version above the rows it replaces, which are at most the
        # previous batch's.
        version = 1 if kind == "applied" else number + 2
        batches.append(pa.concat_tables([keyed_rows(old, 1 if kind == "applied" else version),
                                         keyed_rows(new, version)]))
    return batches


def _median_seconds(writers: Mapping[str, Callable[[pa.Table, int], object]],
                    batches: list[pa.Table]) -> dict[str, float]:
    """Each writer's median seconds per batch, batch 0 untimed; the writers take turns."""
    seconds: dict[str, list[float]] = {name: [] for name in writers}
    for number, batch in enumerate(batches):
        for name, write in writers.items():
            started = time.perf_counter()
            write(batch, number)
            if number:
                seconds[name].append(time.perf_counter() - started)
    return {name: statistics.median(times) for name, times in seconds.items()}


def _sorted_keys(table: Any) -> pa.Table:
    keys = table.refresh().scan(selected_fields=("id", "version")).to_arrow()
    return keys.sort_by("id").combine_chunks()


def bench_upsert(base_rows: int, batch_rows: int, batches: int, kind: str) -> dict[str, Any]:
    """The sink against a plain append and against ``Table.upsert``, ``batches`` timed batches
    of ``kind`` (:data:`KINDS`) into tables of ``base_rows`` rows."""
    from pyiceberg.catalog import load_catalog

    from kafka_share_eos import IdempotentUpsertSink

    with tempfile.TemporaryDirectory(prefix="bench-iceberg-") as workdir:
        config = catalog_config(Path(workdir))
        catalog = load_catalog(**config)
        catalog.create_namespace("bench")
        base = keyed_rows(list(range(base_rows)), 1)
        tables = {}
        for name in ("append", "sink", "pyiceberg_upsert"):
            tables[name] = catalog.create_table(f"bench.{name}", schema=base.schema)
            tables[name].append(base)
        sink = IdempotentUpsertSink.iceberg("bench.sink", catalog=config, key_columns=["id"],
                                            version_column="version")
        upserted = tables["pyiceberg_upsert"]
        median = _median_seconds({
            "append": lambda batch, _: tables["append"].append(batch),
            "sink": sink.apply,
            "pyiceberg_upsert": lambda batch, _: upserted.upsert(batch, join_cols=["id"]),
        }, upsert_batches(base_rows, batch_rows, batches + 1, kind))
        report = sink.last_report
        stored = [_sorted_keys(tables[name]) for name in ("sink", "pyiceberg_upsert")]
    expected = base_rows + (batches + 1) * (batch_rows - batch_rows // EXISTING_SHARE)
    # Both upserts must end with every key once, at the same version.
    if stored[0].num_rows != expected or not stored[0].equals(stored[1]):
        raise RuntimeError(f"the Iceberg upserts hold {stored[0].num_rows} and "
                           f"{stored[1].num_rows} rows, not the same {expected}")
    return {
        "kind": kind, "base_rows": base_rows, "batch_rows": batch_rows, "batches": batches,
        "write_path": None if report is None else report.write_path,
        **{f"{name}_rows_per_s": batch_rows / seconds for name, seconds in median.items()},
        "sink_vs_append": median["append"] / median["sink"],
        "sink_vs_pyiceberg_upsert": median["pyiceberg_upsert"] / median["sink"],
    }


def bench_dedup(batch_rows: int, batches: int, value_bytes: int = 1000) -> dict[str, Any]:
    """The checkpoint-dedup store into Iceberg against a plain pyiceberg append of the same
    batches (new records plus 5 % of the previous batch redelivered)."""
    from pyiceberg.catalog import load_catalog

    from kafka_share_eos import CheckpointDedupStore, IcebergAppendSink

    with tempfile.TemporaryDirectory(prefix="bench-iceberg-dedup-") as workdir:
        config = catalog_config(Path(workdir))
        head = prefill(f"{workdir}/ledger", LEDGER_IDENTITIES)
        store = CheckpointDedupStore(f"{workdir}/ledger", IcebergAppendSink(
            "bench.store", catalog=config, create_table=True))
        data, redeliver = [], None
        for _ in range(batches + 1):
            data.append(batch_of(head, batch_rows // 4, redeliver, value_bytes))
            head += batch_rows // 4
            redeliver = data[-1].slice(data[-1].num_rows - batch_rows // 20)
        catalog = load_catalog(**config)
        catalog.create_namespace_if_not_exists("bench")
        plain = catalog.create_table("bench.plain", schema=data[0].schema)
        median = _median_seconds({
            "store": lambda batch, number: store.apply(batch, number + 1),
            "append": lambda batch, _: plain.append(batch),
        }, data)
    return {"batch_rows": batch_rows, "batches": batches, "value_bytes": value_bytes,
            "store_s": median["store"], "plain_s": median["append"],
            "throughput_vs_plain": median["append"] / median["store"]}


def run(base_rows: int = 1_000_000, batch_rows: int = 20_000, batches: int = 15,
        dedup_batch_rows: int = 10_000, dedup_batches: int = 15) -> dict[str, Any]:
    """Both upsert contests and the dedup contest."""
    return {
        "upsert": {kind: bench_upsert(base_rows, batch_rows, batches, kind) for kind in KINDS},
        "dedup": bench_dedup(dedup_batch_rows, dedup_batches),
    }


_UPSERT_TARGETS = {"append": 0.7, "pyiceberg_upsert": 5.0}
_EXISTING = {"applied": "redelivered from the previous batch",
             "newer": "keys at random over the table"}
_DEDUP_TARGETS = {10_000: 0.6}


def iceberg_ratios(result: Mapping[str, Any]) -> list[Ratio]:
    """The upsert sink against a plain append and against ``Table.upsert`` for each kind of
    batch, and the dedup store against a plain append."""
    rows = []
    for baseline, label in (("append", "pyiceberg append"),
                            ("pyiceberg_upsert", "pyiceberg Table.upsert")):
        for kind, entry in result["upsert"].items():
            rows.append(Ratio(
                "iceberg",
                f"Iceberg upsert, {KINDS[kind]} vs {label}",
                entry[f"sink_vs_{baseline}"],
                target=Target(">=", _UPSERT_TARGETS[baseline]),
                detail=f"{entry['sink_rows_per_s']:,.0f} vs "
                f"{entry[f'{baseline}_rows_per_s']:,.0f} rows/s, "
                f"{count(entry['batch_rows'])}-row batches into {count(entry['base_rows'])} "
                f"rows (one file), {_EXISTING[kind]}, medians of {entry['batches']}",
            ))
    dedup = result["dedup"]
    rows.append(dedup_vs_append(
        "iceberg",
        f"dedup store into Iceberg vs Iceberg append, {count(dedup['batch_rows'])}-row batches",
        dedup, _DEDUP_TARGETS.get(int(dedup["batch_rows"])), value_bytes=dedup["value_bytes"],
        batches=dedup["batches"], ledger=f"{count(LEDGER_IDENTITIES)}-identity Delta ledger",
    ))
    return rows


def main() -> None:
    sizes = {"base_rows": 1_000_000, "batch_rows": 20_000, "batches": 15,
             "dedup_batch_rows": 10_000, "dedup_batches": 15}
    args = script_parser(__doc__, sizes).parse_args()
    result = run(args.base_rows, args.batch_rows, args.batches, args.dedup_batch_rows,
                 args.dedup_batches)
    print(json.dumps(result, indent=2))
    for row in iceberg_ratios(result):
        print(f"{row.name}: {row.value_text} (target {row.target_text}); {row.detail}")


if __name__ == "__main__":
    main()
