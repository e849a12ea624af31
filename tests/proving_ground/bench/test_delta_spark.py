"""The delta-spark benchmark: its rows from a result, and a small run in the delta-spark tier."""

from __future__ import annotations

import pytest

from kafka_share_eos.proving_ground.bench.delta_spark import delta_spark_ratios, run


def test_each_size_gives_the_upsert_against_the_append_the_users_merge_and_delta_rs() -> None:
    measured = {"spark_append_rows_per_s": 1000.0, "spark_upsert_rows_per_s": 600.0,
                "user_merge_rows_per_s": 750.0, "delta_rs_upsert_rows_per_s": 1200.0,
                "spark_upsert_vs_spark_append": 0.6, "spark_upsert_vs_user_merge": 0.8,
                "delta_rs_upsert_vs_spark_upsert": 2.0}
    rows = delta_spark_ratios({"sizes": {"20000": measured, "1000000": measured}})
    assert [r.name for r in rows] == [
        "delta-spark upsert (MERGE) vs delta-spark append, 20k rows",
        "delta-spark upsert vs Delta's documented idempotent foreachBatch MERGE, 20k rows",
        "delta-rs upsert (driver) vs delta-spark upsert, 20k rows",
        "delta-spark upsert (MERGE) vs delta-spark append, 1M rows",
        "delta-spark upsert vs Delta's documented idempotent foreachBatch MERGE, 1M rows",
        "delta-rs upsert (driver) vs delta-spark upsert, 1M rows",
    ]
    assert [str(r.target) for r in rows[:3]] == ["≥ 0.5", "≥ 0.9", "None"]
    assert rows[0].meets and rows[1].meets is False and rows[2].value == 2.0
    assert delta_spark_ratios({"sizes": {}, "not_run": {"delta-spark": "missing"}}) == []


@pytest.mark.delta_spark
@pytest.mark.full
@pytest.mark.spark
@pytest.mark.timeout(600)
def test_a_small_run_measures_every_contender() -> None:
    measured = run([2_000])["sizes"]["2000"]
    for name in ("spark_append", "user_merge", "spark_upsert", "delta_rs_upsert"):
        assert measured[f"{name}_rows_per_s"] > 0
