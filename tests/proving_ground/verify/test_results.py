"""The verifier's results file: every field of a run survives the round trip, a line cut short
by a crash of the verifier is skipped, a corrupt line elsewhere is an error naming it."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_share_eos.proving_ground.verify.results import ResultsFile, spec_key
from kafka_share_eos.proving_ground.verify.score import Score
from kafka_share_eos.proving_ground.verify.spec import Mix, RunResult, RunSpec


def _result(index: int, duplicates: int = 0) -> RunResult:
    spec = RunSpec("two-phase", "2pc.after_decision", index, 7, mix=Mix(bad_records=True))
    score = Score(44, duplicates, 0, 1, {"postgres": (duplicates, 0), "delta": (0, 0)})
    return RunResult(spec, score, starts=3, crashes=2, absorbed=12, seconds=21.5,
                     cycle_seconds=[8.25, 9.0], error=None if index else "gave up")


def test_runs_round_trip(tmp_path: Path) -> None:
    results = ResultsFile(tmp_path / "runs.jsonl")
    written = [_result(0), _result(1, duplicates=2)]
    for result in written:
        results.append(result)
    assert results.recorded() == {spec_key(r.spec): r for r in written}


def test_runs_differing_in_any_option_are_different_runs() -> None:
    spec = _result(0).spec
    assert spec_key(spec) != spec_key(RunSpec(**{**spec.__dict__, "crashes": 1}))
    assert spec_key(spec) != spec_key(RunSpec(**{**spec.__dict__, "mix": Mix()}))


def test_a_torn_last_line_is_skipped_a_corrupt_line_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    results = ResultsFile(path)
    results.append(_result(0))
    with path.open("a") as out:
        out.write('{"spec": {"target": "two-ph')
    assert list(results.recorded().values()) == [_result(0)]
    with path.open("a") as out:
        out.write("\n")
    results.append(_result(1))
    with pytest.raises(ValueError, match=r"runs.jsonl:2: not a verify result"):
        results.recorded()
