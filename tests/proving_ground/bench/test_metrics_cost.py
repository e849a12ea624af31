"""The benchmark row of the metrics' cost: the served pipeline's rate against the plain one's,
held to 0.97x, with what the row's detail says about the run."""

from __future__ import annotations

from kafka_share_eos.proving_ground.bench.ratios import metrics_ratios


def test_the_row_compares_served_with_plain_and_holds_it_to_097() -> None:
    run = {"records": 100_000, "per_trigger": 10_000, "scrape_interval_s": 1.0, "ratio": 0.98,
           "rounds": [{"ratio": r, "served_records_per_second": 9_800.0,
                       "plain_records_per_second": 10_000.0,
                       "served": [{"scrapes": 12}, {"scrapes": 11}]} for r in (0.96, 0.98, 1.01)]}
    (row,) = metrics_ratios(run)
    assert (row.benchmark, row.value, row.meets, row.target_text) == (
        "metrics", 0.98, True, "≥ 0.97x")
    assert "23 scrapes" in row.detail and "[0.96, 0.98, 1.01]" in row.detail
