"""The chaos verifier, for real: Spark pipelines SIGKILLed at crash points, restarted, counted.

A small matrix (the source's and the dedup store's points and a random kill, one run each; the
sinks' and the coordinator's points run in the two-application matrix, and alone with one
application under the ``full`` marker) must come out exactly once, counted from the sinks' data;
a sink without deduplication, crashed after its write, must be caught duplicating, with a
non-zero exit code.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kafka_share_eos.cli.main import app
from kafka_share_eos.proving_ground.launchers.postgres import PostgresDatabases
from kafka_share_eos.proving_ground.verify import MatrixOptions, Mix, run_matrix
from kafka_share_eos.proving_ground.verify.matrix import MatrixResult
from kafka_share_eos.proving_ground.verify.spec import RunResult

pytestmark = pytest.mark.timeout(900)

CI_CELLS = [
    ("upsert-sqlite", "source.during_ack"),
    ("dedup-delta", "dedup.after_sink"),
    ("upsert-sqlite", "random-kill"),
]
# Points the two-application CI matrix below crashes too (with a second application beside).
ONE_APPLICATION_CELLS = [
    ("upsert-postgres", "sink.mid_write"),
    ("upsert-delta", "strategy.after_write"),
    ("two-phase", "2pc.after_decision"),
]


def test_small_matrix_is_exactly_once(postgres_server: PostgresDatabases, tmp_path: Path) -> None:
    runs = tmp_path / "runs.jsonl"
    options = MatrixOptions(only=CI_CELLS, crashes=1, parallel=2, seed=8,
                            postgres_url=postgres_server.url, results=runs,
                            workdir=tmp_path / "work")
    result = run_matrix(options)
    assert summary(result) == {cell: (1, True, 40, 0, 0, []) for cell in CI_CELLS}
    assert result.ok

    # Started again on its results file, the matrix runs only what the file lacks: here the
    # last run, as if the verifier had been interrupted during it (its directory is left over).
    recorded = runs.read_text().splitlines()
    runs.write_text("\n".join(recorded[:-1]) + "\n")
    rerun: list[RunResult] = []
    resumed = run_matrix(options, on_run=rerun.append)
    assert [run.spec.key for run in rerun] == [_key(json.loads(recorded[-1]))]
    assert rerun[0].ok, rerun[0].error
    assert resumed.ok
    assert [len(cell.runs) for cell in resumed.cells] == [1] * len(CI_CELLS)
    assert len(runs.read_text().splitlines()) == len(CI_CELLS)


@pytest.mark.full
def test_one_application_at_the_sinks_and_coordinators_points_is_exactly_once(
    postgres_server: PostgresDatabases, tmp_path: Path
) -> None:
    result = run_matrix(MatrixOptions(
        only=ONE_APPLICATION_CELLS, crashes=1, parallel=2, seed=8,
        postgres_url=postgres_server.url, workdir=tmp_path / "work",
    ))
    assert summary(result) == {cell: (1, True, 40, 0, 0, []) for cell in ONE_APPLICATION_CELLS}


def summary(result: MatrixResult) -> dict[tuple[str, str], tuple[Any, ...]]:
    """Per cell: runs, whether its point fired, records, duplicates, losses, errors."""
    return {
        (cell.target, cell.point): (
            len(cell.runs), cell.exercised, cell.score_total("records"),
            cell.score_total("duplicates"), cell.score_total("losses"), cell.errors,
        )
        for cell in result.cells
    }


def _key(recorded: dict[str, Any]) -> str:
    spec = recorded["spec"]
    return f"{spec['target']}-{spec['point']}-{spec['index']}"


def test_verifier_catches_a_sink_without_deduplication() -> None:
    handler = signal.getsignal(signal.SIGTERM)
    outcome = CliRunner().invoke(
        app,
        ["verify", "--strategy", "unsafe-increment", "--crash-points", "strategy.after_write",
         "--crashes-per-run", "1", "--records", "20", "--seed", "3", "--json"],
    )
    assert outcome.exit_code == 1, outcome.output
    report = json.loads(outcome.stdout)
    (cell,) = report["cells"]
    assert (cell["strategy"], cell["crash_point"], cell["crashes"]) == (
        "unsafe-increment", "strategy.after_write", 1
    )
    assert cell["duplicates"] > 0
    assert cell["losses"] == 0
    assert report["ok"] is False
    # The process's own SIGTERM handler is back once the run ended.
    assert signal.getsignal(signal.SIGTERM) is handler


@pytest.mark.full
def test_bad_records_are_applied_or_dead_lettered_never_lost(
    postgres_server: PostgresDatabases,
) -> None:
    cells = [("upsert-postgres", "strategy.after_write"), ("dedup-delta", "source.after_journal")]
    result = run_matrix(
        MatrixOptions(only=cells, crashes=1, parallel=2, seed=11, mix=Mix(bad_records=True),
                      postgres_url=postgres_server.url)
    )
    summary = {
        (cell.target, cell.point): (
            cell.score_total("records"), cell.score_total("duplicates"),
            cell.score_total("losses"), cell.score_total("dead_lettered"), cell.errors,
        )
        for cell in result.cells
    }
    # 40 records plus a null key, a non-JSON payload, an oversized value and a poison record:
    # only the poison record goes to the dead letters.
    assert summary == {cell: (44, 0, 0, 1, []) for cell in cells}


@pytest.mark.full
def test_polling_ahead_under_after_journal_is_exactly_once() -> None:
    # The pump ACCEPTs each poll right after its journal write while Spark runs a batch: crashed
    # halfway through a poll's acknowledgements, then SIGKILLed at random moments.
    cells = [("upsert-sqlite", "source.during_ack"), ("upsert-sqlite", "random-kill")]
    result = run_matrix(
        MatrixOptions(only=cells, crashes=1, parallel=2, seed=5, mix=Mix(after_journal=True))
    )
    summary = {
        (cell.target, cell.point): (
            cell.exercised, cell.score_total("records"), cell.score_total("duplicates"),
            cell.score_total("losses"), cell.errors,
        )
        for cell in result.cells
    }
    assert summary == {cell: (True, 40, 0, 0, []) for cell in cells}


CONSUMER_CELLS = [
    ("upsert-sqlite", "slot.after_poll"),
    ("upsert-postgres", "slot.during_ack"),
    ("upsert-delta", "slot.after_segment"),
    ("two-phase", "slot.reading_other"),
    ("dedup-delta", "random-kill"),
]


# CI runs two of these on the embedded broker; the Apache Kafka cells
# (tests/crashes/test_verify_kafka.py) run the other strategies with executor consumers in CI.
CONSUMER_CELLS_IN_CI = {CONSUMER_CELLS[0], CONSUMER_CELLS[2]}


@pytest.mark.parametrize("cell", [
    pytest.param(cell, id="-".join(cell),
                 marks=() if cell in CONSUMER_CELLS_IN_CI else (pytest.mark.full,))
    for cell in CONSUMER_CELLS
])
def test_three_executor_consumers_are_exactly_once(
    cell: tuple[str, str], postgres_server: PostgresDatabases, tmp_path: Path
) -> None:
    # consumers=3: the share consumers poll, journal their slots and ACCEPT inside executor
    # tasks, which the crash points kill; every strategy, its run crashed once. One test per
    # cell, so that pytest's workers share the matrix out.
    result = run_matrix(
        MatrixOptions(only=[cell], crashes=1, parallel=1, seed=13, mix=Mix(consumers=3),
                      postgres_url=postgres_server.url, workdir=tmp_path / "work")
    )
    assert summary(result) == {cell: (1, True, 40, 0, 0, [])}
    # More than one consumer journaled records.
    (ran,) = result.cells
    assert min(ran.consumers_applying()) > 1, ran.consumers_applying()


APPLICATION_CELLS = [
    ("upsert-sqlite", "random-kill"),
    ("upsert-postgres", "sink.mid_write"),
    ("upsert-delta", "strategy.after_write"),
    ("two-phase", "2pc.after_decision"),
    ("dedup-delta", "dedup.before_sink"),
]


# CI runs two of these on the embedded broker; the Apache Kafka cells run two applications
# with the other strategies in CI.
APPLICATION_CELLS_IN_CI = {APPLICATION_CELLS[0], APPLICATION_CELLS[2]}


@pytest.mark.parametrize("cell", [
    pytest.param(cell, id="-".join(cell),
                 marks=() if cell in APPLICATION_CELLS_IN_CI else (pytest.mark.full,))
    for cell in APPLICATION_CELLS
])
def test_two_applications_sharing_the_targets_are_exactly_once(
    cell: tuple[str, str], postgres_server: PostgresDatabases, tmp_path: Path
) -> None:
    # Two applications consume one share group into one set of targets (and one dedup ledger),
    # each with its own checkpoint, journal and app_id; the first is crashed (or SIGKILLed at a
    # random moment) once. Every start stalls once with a batch at the strategy's hold point,
    # its consumers silent past the session timeout, so the broker hands its records to the
    # other application while it still holds them.
    result = run_matrix(
        MatrixOptions(only=[cell], crashes=1, parallel=1, seed=17, records=60,
                      mix=Mix(pipelines=2, handoffs=True), postgres_url=postgres_server.url,
                      workdir=tmp_path / "work")
    )
    assert summary(result) == {cell: (1, True, 60, 0, 0, [])}
    # Both applications consumed records, and batches of both held the same records; which of
    # them applied a record depends on the broker's timing (one may apply them all).
    (run,) = result.cells[0].runs
    assert min(run.held.values()) > 0, run.held
    assert run.handoffs > 0
