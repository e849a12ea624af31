"""Faults as verify cells: on a three-node Apache Kafka, a partition leader SIGKILLed mid-batch,
the share-group state's leader SIGKILLed mid-batch, a partition leader restarted cleanly
mid-batch, the pipeline cut off from every broker for longer than the record lock; and a Spark
standalone worker SIGKILLed with its executors mid-batch. Each cell must be exactly once with
one start of its pipeline (the query carries on through the fault) and report the stall it
caused."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_share_eos.proving_ground.verify import MatrixOptions, run_matrix
from kafka_share_eos.proving_ground.verify.spec import RunResult

pytestmark = [pytest.mark.kafka, pytest.mark.full, pytest.mark.timeout(900)]


def _one_run(fault: str, tmp_path: Path) -> RunResult:
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
    return run


@pytest.mark.parametrize("fault", ["broker-kill", "coordinator-kill", "broker-restart",
                                   "partition"])
def test_the_stream_carries_on_exactly_once_through_a_kafka_fault(
    fault: str, tmp_path: Path
) -> None:
    _one_run(fault, tmp_path)


@pytest.mark.spark
def test_the_stream_carries_on_exactly_once_through_a_lost_spark_worker(tmp_path: Path) -> None:
    run = _one_run("worker-kill", tmp_path)
    assert run.spec.mix.consumers == 2
    assert run.fault is not None and "SIGKILL worker 0" in run.fault["did"]
