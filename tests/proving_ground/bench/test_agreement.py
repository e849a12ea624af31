"""``bench --against``: a quick run's rows paired with a saved run's, and how far apart they are."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kafka_share_eos.cli.main import app
from kafka_share_eos.proving_ground.bench.agreement import agreements, saved_ratios, summary
from kafka_share_eos.proving_ground.bench.ratios import Ratio, Target


def _row(name: str, value: float, benchmark: str = "source") -> Ratio:
    return Ratio(benchmark, name, value, target=Target(">=", 0.9))


def test_only_shared_rows_are_paired_and_a_row_beyond_20_percent_is_named() -> None:
    full = [_row("afterCommit", 0.80), _row("afterJournal", 0.90), _row("1M rows", 0.5, "dedup")]
    quick = [_row("afterCommit", 0.97), _row("afterJournal", 0.72), _row("quick only", 1.0)]

    rows = agreements(quick, full)

    assert [(row.name, row.agrees) for row in rows] == [
        ("afterCommit", False), ("afterJournal", True)
    ]
    assert rows[0].deviation == pytest.approx(0.2125)
    assert rows[1].deviation == pytest.approx(-0.2)
    assert summary(rows) == (
        "1 of 2 shared rows within 20% of the reference run: apart source / afterCommit +21%"
    )


def test_a_saved_run_reads_back_row_for_row(tmp_path: Path) -> None:
    saved = tmp_path / "run.json"
    rows = [_row("afterCommit", 0.81), Ratio("end-to-end", "memory", 1.05)]
    saved.write_text(json.dumps({"ratios": [row.to_json() for row in rows]}), encoding="utf-8")

    assert saved_ratios(saved) == rows


def test_against_a_file_that_is_no_saved_run_is_refused_before_any_benchmark_runs(
    tmp_path: Path,
) -> None:
    not_a_run = tmp_path / "notes.json"
    not_a_run.write_text('{"rows": []}', encoding="utf-8")

    result = CliRunner().invoke(app, ["bench", "--quick", "--against", str(not_a_run)])

    assert result.exit_code == 2
    assert "--against" in result.output
    assert "not a run saved by" in " ".join(result.output.split())
