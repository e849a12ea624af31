"""What ``kafka-share-eos bench`` reports: one ratio per comparison, with the target it should meet.

Each benchmark returns its own dict of numbers; the functions here reduce those dicts to
:class:`Ratio` rows, so the table shows the same comparisons whatever sizes were run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

TIMES = "x"
US_PER_RECORD = "µs/record"


@dataclass(frozen=True)
class Target:
    """A bound a measured value should respect: ``value >= bound`` or ``value <= bound``."""

    op: Literal[">=", "<="]
    bound: float

    def met_by(self, value: float) -> bool:
        """Whether ``value`` respects the bound."""
        return value >= self.bound if self.op == ">=" else value <= self.bound

    def __str__(self) -> str:
        return f"{'≥' if self.op == '>=' else '≤'} {self.bound:g}"


@dataclass(frozen=True)
class Ratio:
    """One row of the benchmark table."""

    benchmark: str
    name: str
    value: float
    unit: str = TIMES
    target: Target | None = None
    detail: str = ""

    @property
    def meets(self) -> bool | None:
        """Whether the target is met; ``None`` when the row has no target."""
        return None if self.target is None else self.target.met_by(self.value)

    def to_json(self) -> dict[str, Any]:
        """The row as plain JSON values."""
        return {
            "benchmark": self.benchmark,
            "name": self.name,
            "value": self.value,
            "unit": self.unit,
            "target": None if self.target is None else str(self.target),
            "meets": self.meets,
            "detail": self.detail,
        }


def count(n: int) -> str:
    """``10000`` → ``10k``, ``1000000`` → ``1M``: sizes as a reader says them."""
    for bound, suffix in ((1_000_000, "M"), (1_000, "k")):
        if n >= bound and n % bound == 0:
            return f"{n // bound}{suffix}"
    return f"{n:,}"


def source_ratios(result: Mapping[str, Any]) -> list[Ratio]:
    """Source throughput against a raw ShareConsumer loop, and the runner's CPU per record."""
    raw_rate = result["raw"]["records_per_second"]
    measured = len(result.get("rounds", ()))
    rounds = f"; medians of {measured} rounds" if measured > 1 else ""
    rows = []
    for key, label in (
        ("spark_after_commit", "Spark query, afterCommit"),
        ("spark_after_journal", "Spark query, afterJournal"),
    ):
        if key in result:
            entry = result[key]
            rows.append(
                Ratio(
                    "source",
                    f"{label}, stream rate vs raw consumer",
                    entry["stream_ratio_vs_raw"],
                    target=Target(">=", 0.9),
                    detail=f"first micro-batch to last; from start() to the last record "
                    f"{entry['throughput_ratio_vs_raw']:.2f}x; raw loop {raw_rate:,.0f} records/s"
                    f"{rounds}",
                )
            )
    planner = result["planner"]
    rows.append(
        Ratio(
            "source",
            "planning path without Spark vs raw consumer",
            planner["throughput_ratio_vs_raw"],
            target=Target(">=", 0.9),
            detail=f"{planner['records_per_second']:,.0f} records/s, {result['records']:,} records",
        )
    )
    rows.append(
        Ratio(
            "source",
            "runner CPU per record",
            result["runner_cpu_us_per_record"],
            unit=US_PER_RECORD,
            target=Target("<=", 5.0),
            detail="calling thread's CPU, client calls included",
        )
    )
    return rows


def upsert_ratios(result: Mapping[str, Any]) -> list[Ratio]:
    """The upsert sink against a plain append of the same rows (Postgres COPY, Delta append)."""
    pg, delta = result["postgres"], result["delta"]
    copy_rate = f"COPY {pg['plain_copy_rows_per_s']:,.0f} rows/s"
    rows = [
        Ratio(
            "upsert",
            f"Postgres, {label} vs plain COPY append",
            pg[f"upsert_{case}_vs_plain_copy"],
            target=Target(">=", 0.7) if case == "new" else None,
            detail=f"{pg[f'upsert_{case}_rows_per_s']:,.0f} rows/s vs {copy_rate}",
        )
        for case, label in (
            ("new", "new rows"),
            ("10pct_applied", "10% already applied"),
            ("all_applied", "all already applied"),
        )
    ]
    rows.append(
        Ratio(
            "upsert",
            f"Delta MERGE into {count(delta['base_rows'])} rows vs append",
            delta["merge_vs_append"],
            detail=f"{delta['merge_rows_per_s']:,.0f} vs {delta['append_rows_per_s']:,.0f} rows/s, "
            f"{count(delta['batch_rows'])}-row batch",
        )
    )
    return rows


_TWO_PHASE_LABELS = {
    "2pc_set_effect": ("Postgres, set-based effect", Target(">=", 0.5)),
    "2pc_postgres_delta": ("Postgres + Delta, set-based effect", Target(">=", 0.5)),
    "2pc_row_effect": ("Postgres, per-record SQL effect", None),
}


def two_phase_ratios(result: Mapping[str, Any]) -> list[Ratio]:
    """The two-phase-commit coordinator against the upsert sink on the same batches."""
    rates = result["rows_per_second"]
    return [
        Ratio(
            "two-phase commit",
            f"{label} vs upsert sink",
            result["ratio_to_upsert"][key],
            target=target,
            detail=f"{rates[key]:,} vs {rates['upsert']:,} rows/s",
        )
        for key, (label, target) in _TWO_PHASE_LABELS.items()
        if key in result["ratio_to_upsert"]
    ]


def dedup_ratios(result: Mapping[str, Any]) -> list[Ratio]:
    """The checkpoint-dedup store against a plain append, and its cost as the ledger grows."""
    # Ledger sizes key the result; a JSON round trip turns them into strings.
    sizes = sorted(result["per_batch_s"], key=int)
    smallest = sizes[0]
    per_batch = result["per_batch_s"]
    rows = [
        Ratio(
            "dedup",
            f"store vs plain Delta append, {count(int(smallest))}-identity ledger",
            result["throughput_vs_plain"][smallest],
            target=Target(">=", 0.5),
            detail=f"{per_batch[smallest] * 1000:.1f} vs "
            f"{result['plain_append_s'][smallest] * 1000:.1f} ms per "
            f"{count(result['batch_rows'])}-row batch",
        )
    ]
    rows += [
        Ratio(
            "dedup",
            f"ledger growth: batch cost at {count(int(size))} vs {count(int(smallest))} identities",
            result["cost_vs_smallest"][size],
            target=Target("<=", 1.3),
            detail=f"{per_batch[size] * 1000:.1f} ms/batch; store vs plain append "
            f"{result['throughput_vs_plain'][size]:.2f}x",
        )
        for size in sizes[1:]
    ]
    return rows
