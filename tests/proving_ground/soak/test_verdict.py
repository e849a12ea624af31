"""The soak's checks: each names what failed, and a result saved is the result loaded."""

from __future__ import annotations

from pathlib import Path

from kafka_share_eos.proving_ground.soak.verdict import SoakResult

KINDS = ["pipeline-kill", "store-503"]


def _passing() -> SoakResult:
    return SoakResult(
        3.0, records=500, faults={"pipeline-kill": 1, "store-503": 2},
        rss_start_mib={"driver": 800.0, "runners": 120.0},
        rss_end_mib={"driver": 880.0, "runners": 132.0},
        journal_files={"warm_up": 50, "end": 60}, journal_metrics={"warm_up": 20, "end": 1000},
        ledger_rows={"warm_up": 3000, "end": 3600},
        lives=[{"started_s": 0.0, "rss_warm_up_mib": {"driver": 800.0, "runners": 120.0},
                "rss_last_mib": {"driver": 850.0, "runners": 125.0}},
               {"started_s": 90.0, "rss_warm_up_mib": None,
                "rss_last_mib": {"driver": 600.0, "runners": 100.0}}],
    )


def test_a_soak_within_every_limit_passes() -> None:
    result = _passing()
    result.judge(KINDS)

    assert result.passed
    assert result.checks == {}


def test_each_check_past_its_limit_is_named() -> None:
    result = _passing()
    result.duplicates, result.lost = 2, 1
    result.rss_end_mib["runners"] = 132.1
    result.journal_files["end"] = 61
    result.journal_metrics["end"] = 1001
    result.ledger_rows["end"] = 3601
    result.lives[0]["rss_last_mib"]["driver"] = 880.1
    result.faults.pop("store-503")
    result.error = "no record applied for 600 s"
    result.judge(KINDS)

    assert not result.passed
    assert sorted(result.checks) == [
        "duplicates", "faults", "journal files", "journal metrics", "ledger rows", "lost",
        "memory driver, start 1", "memory runners", "run"]
    assert result.checks["faults"] == "never struck: store-503"
    assert "3601 at the end against 3000" in result.checks["ledger rows"]


def test_a_saved_result_loads_as_it_was(tmp_path: Path) -> None:
    result = _passing()
    result.judge(KINDS)
    result.save(tmp_path / "soak.json")

    assert SoakResult.load(tmp_path / "soak.json") == result
