"""The verifier in a Spark Connect session: which crash kinds it runs there, what it refuses, and
one cell of it, the server's ``foreachBatch`` worker killed while the upsert into SQLite holds
a batch mid-write, exactly once on the embedded broker (the kill matrix runs under ``full`` in
tests/crashes/test_verify_connect.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kafka_share_eos import faults
from kafka_share_eos.cli.main import app
from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.proving_ground.verify import MatrixOptions, Mix, run_matrix
from kafka_share_eos.proving_ground.verify.connect import faults_environment
from kafka_share_eos.proving_ground.verify.points import CONNECT_POINTS


def test_spark_connect_cells_are_the_connect_kinds_of_each_strategy() -> None:
    options = MatrixOptions(targets=["upsert-sqlite", "two-phase"], spark_connect=True)
    options.check()
    assert options.cells() == [(target, kind) for target in ("upsert-sqlite", "two-phase")
                               for kind in CONNECT_POINTS]


@pytest.mark.parametrize("options", [
    MatrixOptions(spark_connect=True, mix=Mix(pipelines=2)),
    MatrixOptions(spark_connect=True, mix=Mix(handoffs=True)),
    MatrixOptions(spark_connect=True, storage="s3"),
    MatrixOptions(spark_connect=True, targets=["upsert-delta-spark"]),
    MatrixOptions(only=[("upsert-sqlite", "connect.client-kill"),
                        ("upsert-sqlite", "sink.mid_write")]),
], ids=["applications", "handoffs", "object-store", "delta-spark", "classic-point"])
def test_what_a_connect_run_does_not_do_is_refused(options: MatrixOptions) -> None:
    with pytest.raises(ConfigurationError, match="Spark Connect"):
        options.check()


def test_the_command_refuses_a_connect_run_it_cannot_do() -> None:
    result = CliRunner().invoke(app, ["verify", "--spark-connect", "--pipelines", "2"])
    assert result.exit_code == 2, result.output
    assert "several applications" in result.output


def test_the_hold_travels_to_the_worker_as_its_environment(tmp_path: Path) -> None:
    assert json.loads(faults_environment(faults.SINK_MID_WRITE, 2, tmp_path)) == {
        faults.HOLD_AT_ENV: f"{faults.SINK_MID_WRITE}@2",
        faults.HOLD_GATE_ENV: str(tmp_path),
    }


@pytest.mark.connect
@pytest.mark.timeout(300)
def test_killed_foreach_batch_worker_is_exactly_once(tmp_path: Path) -> None:
    result = run_matrix(MatrixOptions(
        only=[("upsert-sqlite", "connect.worker-kill")], crashes=1, seed=3,
        workdir=tmp_path / "work",
    ))
    (cell,) = result.cells
    (run,) = cell.runs
    assert run.error is None, run.error
    assert run.crashes == 1, "the worker was never killed mid-strategy"
    assert (run.score.records, run.score.duplicates, run.score.losses) == (40, 0, 0)
    # The restarted query applied again what the killed worker's batch had begun.
    assert run.redelivered > 0
