"""Broker faults as verify cells on a three-node Apache Kafka: a partition leader SIGKILLed
mid-batch, the share-group state's leader SIGKILLed mid-batch, a partition leader restarted
cleanly mid-batch. Each cell must be exactly once with one start of its pipeline (the query
carries on through the fault) and report the stall it caused."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_share_eos.verify import MatrixOptions, run_matrix

pytestmark = [pytest.mark.kafka, pytest.mark.full, pytest.mark.timeout(900)]


@pytest.mark.parametrize("fault", ["broker-kill", "coordinator-kill", "broker-restart"])
def test_the_stream_carries_on_exactly_once_through_a_broker_fault(
    fault: str, tmp_path: Path
) -> None:
    result = run_matrix(MatrixOptions(
        targets=["upsert-sqlite"], points=(), faults=[fault], seed=35, broker="kafka",
        workdir=tmp_path / "work",
    ))
    (cell,) = result.cells
    (run,) = cell.runs
    assert run.error is None, run.error
    assert cell.exercised, "the fault never struck"
    assert run.fault is not None and run.fault["did"], run.fault
    assert (run.score.records, run.score.duplicates, run.score.losses) == (40, 0, 0)
    assert (run.starts, run.failed_starts) == (1, 0)
    assert run.fault["stall_seconds"] is not None and run.fault["healed_after_seconds"]
