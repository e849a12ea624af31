"""The benchmark rows and their targets, reduced from a benchmark's numbers (no benchmark runs)."""

from __future__ import annotations

from kafka_share_eos.bench.ratios import Ratio, two_phase_ratios


def _by_name(rows: list[Ratio]) -> dict[str, Ratio]:
    return {row.name: row for row in rows}


def test_two_phase_per_record_effect_is_held_to_its_statements_at_least_once() -> None:
    result = {
        "rows_per_batch": 20_000, "batches": 5,
        "rows_per_second": {"upsert": 300_000, "2pc_set_effect": 270_000,
                            "2pc_row_effect": 60_000, "2pc_postgres_delta": 220_000,
                            "row_statements_at_least_once": 70_000},
        "ratio_to_upsert": {"2pc_set_effect": 0.9, "2pc_row_effect": 0.2,
                            "2pc_postgres_delta": 0.733},
        "row_effect_vs_at_least_once": 0.857,
    }
    rows = _by_name(two_phase_ratios(result))

    against_statements = rows[
        "two-phase, Postgres per-record SQL effect vs the same statements at least once"]
    assert against_statements.value == 0.857
    assert str(against_statements.target) == "≥ 0.8" and against_statements.meets
    assert "60,000 vs 70,000 rows/s" in against_statements.detail
    # The old comparison stays for reference, without a target.
    against_upsert = rows["two-phase, Postgres per-record SQL effect vs upsert sink"]
    assert against_upsert.target is None and against_upsert.meets is None
    assert str(rows["two-phase, Postgres set-based effect vs upsert sink"].target) == "≥ 0.8"


def test_a_saved_run_without_the_at_least_once_contender_still_reduces() -> None:
    result = {
        "rows_per_batch": 1_000, "batches": 2,
        "rows_per_second": {"upsert": 10, "2pc_set_effect": 9},
        "ratio_to_upsert": {"2pc_set_effect": 0.9},
    }
    assert [row.name for row in two_phase_ratios(result)] == [
        "two-phase, Postgres set-based effect vs upsert sink"]
