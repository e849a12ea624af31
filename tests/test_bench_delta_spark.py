"""The delta-spark benchmark: its rows from a result, and a small run in the delta-spark tier."""

from __future__ import annotations

import pytest

from kafka_share_eos.proving_ground.bench.delta_spark import delta_spark_ratios, run


def test_each_size_gives_the_upsert_against_the_append_and_against_delta_rs() -> None:
    measured = {"spark_append_rows_per_s": 1000.0, "spark_upsert_rows_per_s": 600.0,
                "delta_rs_upsert_rows_per_s": 1200.0, "spark_upsert_vs_spark_append": 0.6,
                "delta_rs_upsert_vs_spark_upsert": 2.0}
    rows = delta_spark_ratios({"sizes": {"20000": measured, "1000000": measured}})
    assert [r.name for r in rows] == [
        "delta-spark upsert (MERGE) vs delta-spark append, 20k rows",
        "delta-rs upsert (driver) vs delta-spark upsert, 20k rows",
        "delta-spark upsert (MERGE) vs delta-spark append, 1M rows",
        "delta-rs upsert (driver) vs delta-spark upsert, 1M rows",
    ]
    assert rows[0].target is not None and rows[0].target.met_by(rows[0].value)
    assert rows[1].target is None and rows[1].value == 2.0
    assert delta_spark_ratios({"sizes": {}, "not_run": {"delta-spark": "missing"}}) == []


@pytest.mark.delta_spark
@pytest.mark.full
@pytest.mark.spark
@pytest.mark.timeout(600)
def test_a_small_run_measures_every_contender() -> None:
    measured = run([2_000])["sizes"]["2000"]
    for name in ("spark_append", "spark_upsert", "delta_rs_upsert"):
        assert measured[f"{name}_rows_per_s"] > 0
