"""``kafka-share-eos bench --quick`` runs every benchmark and reports a ratio for each.

Only the shape of the report is checked: timings on a shared machine are not assertable.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from helpers.scripts import run_python
from rich.console import Console

from kafka_share_eos.bench.suite import BENCHMARKS, QUICK, SuiteResult
from kafka_share_eos.cli.bench import render

pytestmark = [pytest.mark.spark, pytest.mark.postgres, pytest.mark.timeout(400)]

@pytest.fixture(scope="module")
def quick_run() -> dict[str, Any]:
    result = run_python("-m", "kafka_share_eos.cli.main", "bench", "--quick", "--json", timeout=380)
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def test_every_benchmark_reports_numeric_ratios(quick_run: dict[str, Any]) -> None:
    assert quick_run["failures"] == {}
    by_benchmark: dict[str, list[dict[str, Any]]] = {}
    for row in quick_run["ratios"]:
        by_benchmark.setdefault(row["benchmark"], []).append(row)
    assert set(by_benchmark) == set(BENCHMARKS)
    for rows in by_benchmark.values():
        for row in rows:
            assert isinstance(row["value"], float) and math.isfinite(row["value"]), row
            assert row["value"] > 0, row
            assert (row["target"] is None) == (row["meets"] is None), row
    names = {row["name"] for row in quick_run["ratios"]}
    assert "Postgres upsert, new keys vs COPY append" in names
    assert "two-phase, Postgres set-based effect vs upsert sink" in names
    assert "dedup store vs Delta append, 1k-row batches" in names
    assert "ledger growth: batch cost at 100k vs 10k identities" in names
    assert "runner CPU per record" in names
    assert any(name.startswith("Spark query, afterCommit") for name in names)


def test_report_names_the_machine_and_the_sizes(quick_run: dict[str, Any]) -> None:
    machine = quick_run["machine"]
    assert int(machine["cpus"]) >= 1
    for key in ("cpu model", "memory", "python", "spark", "librdkafka", "postgres"):
        assert machine[key] and machine[key] not in ("unknown", "not used"), key
    assert quick_run["sizes"]["dedup_ledger_sizes"] == list(QUICK.dedup_ledger_sizes)


def test_table_shows_every_row_with_its_target(quick_run: dict[str, Any]) -> None:
    ratios = [
        ratio
        for name, (_, reduce) in BENCHMARKS.items()
        for ratio in reduce(quick_run["results"][name])
    ]
    assert [r.to_json() for r in ratios] == quick_run["ratios"]
    console = Console(record=True, width=250, color_system=None)
    console.print(render(SuiteResult(QUICK, quick_run["machine"], ratios)))
    text = console.export_text()
    for ratio in ratios:
        assert ratio.name in text
        assert f"{ratio.value:.2f}" in text
    assert "≥ 0.7x" in text and "≤ 5 µs/record" in text
    assert f"PostgreSQL {quick_run['machine']['postgres']}" in text
