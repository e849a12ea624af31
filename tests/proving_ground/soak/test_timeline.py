"""The soak's chart: records per second between samples, each fault kind in the legend, the
verdict in the subtitle."""

from __future__ import annotations

from pathlib import Path

from kafka_share_eos.proving_ground.soak.timeline import chart, rates, redraw
from kafka_share_eos.proving_ground.soak.verdict import SoakResult


def _result() -> SoakResult:
    samples = [{"t": float(t), "applied": 10 * t, "rss_driver": 800.0, "rss_runners": 120.0}
               | ({"heap_live_mib": 210.0} if t % 60 == 0 else {}) for t in range(0, 120, 5)]
    return SoakResult(2.0, records=1200, faults={"broker-kill": 1, "store-503": 1},
                      fault_log=[{"at": 30.0, "kind": "broker-kill"},
                                 {"at": 70.0, "kind": "store-503"}],
                      samples=samples)


def test_rates_are_records_applied_per_second_between_samples() -> None:
    samples = [{"t": 0.0, "applied": 0}, {"t": 10.0, "applied": 50}, {"t": 10.0, "applied": 60},
               {"t": 30.0, "applied": 260}]

    assert rates(samples) == ([10.0 / 60, 0.5], [5.0, 10.0])


def test_the_chart_marks_every_fault_kind_and_says_the_verdict() -> None:
    result = _result()
    result.judge(["broker-kill", "store-503"])
    svg = chart(result)

    assert "broker-kill" in svg and "store-503" in svg
    assert "driver's live heap" in svg
    assert "Every check passed." in svg
    assert "1200 records, 2 faults, 0 duplicates, 0 lost" in svg


def test_a_failed_soak_says_which_checks_failed(tmp_path: Path) -> None:
    result = _result()
    result.lost = 3
    result.judge(["broker-kill", "store-503", "postgres-kill"])
    result.save(tmp_path / "soak.json")

    drawn = redraw(tmp_path / "soak.json")

    assert drawn == tmp_path / "soak.svg"
    assert "Failed: lost, faults" in drawn.read_text()
