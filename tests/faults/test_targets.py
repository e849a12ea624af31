"""The target faults as verify cells: the run's PostgreSQL SIGKILLed mid-batch and started again
(the pipeline restarted on its checkpoint, no prepared transaction left), and OPTIMIZE, VACUUM
and another writer's appends looping on the run's Delta tables; both on the embedded broker."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kafka_share_eos.cli.main import app
from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.proving_ground.verify.matrix_options import MatrixOptions
from kafka_share_eos.proving_ground.verify.outages import OUTAGES, check_faults
from kafka_share_eos.proving_ground.verify.score import FOREIGN_PARTITION, score

TARGET_FAULTS = ("postgres-kill", "delta-maintenance")


def test_the_target_faults_run_on_the_embedded_broker_in_the_strategies_they_fit() -> None:
    check_faults(TARGET_FAULTS, "embedded")
    options = MatrixOptions(targets=["upsert-sqlite", "upsert-postgres", "upsert-delta",
                                     "dedup-delta", "two-phase"],
                            points=(), faults=TARGET_FAULTS)
    options.check()
    assert options.cells() == [
        ("upsert-postgres", "postgres-kill"), ("upsert-delta", "delta-maintenance"),
        ("dedup-delta", "delta-maintenance"), ("two-phase", "postgres-kill"),
        ("two-phase", "delta-maintenance"),
    ]
    assert {spec.crashes for spec in options.specs()} == {0}
    assert OUTAGES["postgres-kill"].owns_postgres and OUTAGES["postgres-kill"].restarts
    assert not OUTAGES["delta-maintenance"].restarts
    with pytest.raises(ConfigurationError, match="postgres-kill strike"):
        MatrixOptions(targets=["upsert-sqlite"], points=(), faults=["postgres-kill"]).check()


def test_another_writers_rows_are_not_counted_and_the_runs_are() -> None:
    produced: Any = {(0, 0): None, (1, 0): None}
    landed = {"delta": {(0, 0): 1, (1, 0): 2, (FOREIGN_PARTITION, 0): 1, (FOREIGN_PARTITION, 1): 1}}
    counted = score(landed, produced, frozenset())
    assert (counted.duplicates, counted.losses) == (1, 0)


def _run_cell(work: Path, strategy: str, fault: str) -> dict[str, Any]:
    """The cell's JSON report after one run; exactly once and struck."""
    outcome = CliRunner().invoke(app, [
        "verify", "--strategy", strategy, "--faults", fault, "--faults-only", "--records", "40",
        "--workdir", str(work), "--json",
    ])
    assert outcome.exit_code == 0, outcome.output
    (cell,) = json.loads(outcome.stdout)["cells"]
    assert (cell["strategy"], cell["crash_point"], cell["ok"], cell["records"],
            cell["duplicates"], cell["losses"], cell["errors"]) == (
        strategy, fault, True, 40, 0, 0, [])
    (run,) = cell["run_details"]
    assert run["fault"]["struck_at"] and run["fault"]["error"] is None
    return run


@pytest.mark.postgres
@pytest.mark.full
@pytest.mark.timeout(900)
def test_postgres_killed_mid_batch_is_exactly_once_with_no_prepared_transaction(
    tmp_path: Path,
) -> None:
    run = _run_cell(tmp_path, "upsert-postgres", "postgres-kill")
    did = run["fault"]["did"]
    assert "SIGKILL of the PostgreSQL server" in did, did
    assert did.endswith("no prepared transaction left after the run"), did
    # The held batch lost its connection: the query stopped and started again.
    assert run["starts"] >= 2, run


@pytest.mark.timeout(900)
def test_delta_maintenance_while_the_pipeline_writes_is_exactly_once(tmp_path: Path) -> None:
    from deltalake import DeltaTable

    run = _run_cell(tmp_path, "dedup-delta", "delta-maintenance")
    assert run["starts"] == 1, run
    (run_dir,) = [path for path in tmp_path.iterdir() if (path / "config.json").exists()]
    for name in ("effects-delta", "ledger"):
        table = DeltaTable(str(run_dir / name))
        operations = {entry["operation"] for entry in table.history()}
        assert {"OPTIMIZE", "VACUUM END"} <= operations, (name, operations)
        partitions = table.to_pyarrow_table(columns=["partition"])["partition"].to_pylist()
        assert FOREIGN_PARTITION in partitions, name
