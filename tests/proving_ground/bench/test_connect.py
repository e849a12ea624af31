"""The benchmark row of Spark Connect's cost: the Connect session's rate against the classic
session's, held to 0.9x, with what the row's detail says about the run; and a classic session's
pipeline runs without the marks a Connect client leaves in the environment."""

from __future__ import annotations

import os
from typing import Any

import pytest

from kafka_share_eos.proving_ground.bench.connect import (
    _CONNECT_MARKS,
    _classic,
    _marks_put_back,
    connect_ratios,
)
from kafka_share_eos.proving_ground.bench.streams import input_rows


def test_the_row_compares_connect_with_classic_and_holds_it_to_09() -> None:
    run = {"records": 100_000, "per_trigger": 10_000, "cores": 2, "ratio": 0.88,
           "rounds": [{"ratio": r, "connect_records_per_second": 8_800.0,
                       "classic_records_per_second": 10_000.0,
                       "connect": [{"addBatch_s": 7.5, "strategy_s": 3.1}],
                       "classic": [{"addBatch_s": 3.7, "strategy_s": 2.9}]}
                      for r in (0.85, 0.88, 0.93)]}
    (row,) = connect_ratios(run)
    assert (row.benchmark, row.value, row.meets, row.target_text) == (
        "connect", 0.88, False, "≥ 0.9x")
    assert "8,800 vs 10,000 records/s" in row.detail and "[0.85, 0.88, 0.93]" in row.detail
    assert "local[2]" in row.detail and "foreachBatch 7.5 vs 3.7 s" in row.detail
    assert "strategy's own 3.1 vs 2.9 s" in row.detail


def test_the_classic_side_runs_without_the_connect_marks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARK_CONNECT_MODE_ENABLED", "1")
    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    with _classic():
        assert "SPARK_CONNECT_MODE_ENABLED" not in os.environ
    assert os.environ["SPARK_CONNECT_MODE_ENABLED"] == "1"
    assert "SPARK_REMOTE" not in os.environ


@pytest.mark.connect
def test_the_benchmarks_after_it_find_the_process_unmarked(
    spark_connect_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in _CONNECT_MARKS:
        # Set first, so that monkeypatch records an absent variable and deletes it again.
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    with _marks_put_back():
        session = spark_connect_server.session()
        assert os.environ["SPARK_CONNECT_MODE_ENABLED"] == "1"
        session.stop()
    assert not [name for name in _CONNECT_MARKS if name in os.environ]


def test_a_connect_servers_progress_counts_the_rows_of_its_sources() -> None:
    # A Connect server's progress JSON leaves out the top-level sums Spark derives.
    connect = {"numInputRows": None, "sources": [{"numInputRows": 30}, {"numInputRows": 12}]}
    classic = {"numInputRows": 7, "sources": [{"numInputRows": 7}]}
    assert (input_rows(connect), input_rows(classic)) == (42, 7)
