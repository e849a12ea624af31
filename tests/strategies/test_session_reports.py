"""A strategy's reports handed to a Spark Connect session: the value keeps the totals of every
batch and the times of the latest, a second run in the session goes on from the first, and a
session that cannot take the value never fails the batch."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from kafka_share_eos.strategies.report import BatchReport, ReportTotals
from kafka_share_eos.strategies.session_reports import (
    RECENT,
    SessionReports,
    SessionReportsValue,
    read_session_reports,
)


def report(batch_id: int, rows_in: int = 10, seconds: float = 0.5) -> BatchReport:
    return BatchReport(batch_id=batch_id, rows_in=rows_in, duplicates_in_batch=1,
                       already_applied=2, rows_written=rows_in - 4, write_path="sql",
                       seconds=seconds, dead_lettered=1)


def test_the_value_totals_every_batch_and_keeps_the_latest_times() -> None:
    value = SessionReportsValue()
    for batch_id in range(RECENT + 5):
        value = value.plus(report(batch_id, seconds=batch_id / 10))

    back = SessionReportsValue.from_json(value.to_json())

    assert back.totals == ReportTotals(batches=RECENT + 5, rows_in=10 * (RECENT + 5),
                                       duplicates_in_batch=RECENT + 5,
                                       already_applied=2 * (RECENT + 5),
                                       rows_written=6 * (RECENT + 5), dead_lettered=RECENT + 5)
    assert list(back.seconds) == [b / 10 for b in range(5, RECENT + 5)]


@pytest.mark.parametrize("text", ["{}", "[1]", '{"totals": {"rows": 1}, "seconds": []}', "x"])
def test_a_value_of_something_else_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="not a strategy's session reports"):
        SessionReportsValue.from_json(text)


def test_outside_a_connect_servers_worker_there_is_no_writer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SPARK_CONNECT_LOCAL_URL", raising=False)
    monkeypatch.setenv("SPARK_CONNECT_MODE_ENABLED", "1")
    assert SessionReports.of_worker("k") is None


@pytest.mark.connect
def test_a_second_run_in_the_session_goes_on_from_the_first(connect_spark: Any) -> None:
    assert read_session_reports(connect_spark, "strategy-a") is None
    SessionReports(connect_spark, "strategy-a").add("upsert", report(0, rows_in=7))
    second = SessionReports(connect_spark, "strategy-a")
    second.add("upsert", report(1, rows_in=5, seconds=2.0))

    value = read_session_reports(connect_spark, "strategy-a")

    assert value is not None
    assert (value.totals.batches, value.totals.rows_in) == (2, 12)
    assert list(value.seconds) == [0.5, 2.0]
    assert read_session_reports(connect_spark, "strategy-b") is None


@pytest.mark.connect
def test_a_session_that_cannot_take_the_value_is_logged_once(
    connect_spark: Any, spark_connect_server: Any, caplog: pytest.LogCaptureFixture,
) -> None:
    closed = spark_connect_server.session()
    closed.stop()
    reports = SessionReports(closed, "strategy-c")
    with caplog.at_level(logging.WARNING, "kafka_share_eos.strategies"):
        reports.add("upsert", report(0))
        reports.add("upsert", report(1))
    warnings = [r for r in caplog.records if "cannot hand the batch reports" in r.message]
    assert len(warnings) == 1
