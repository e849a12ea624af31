"""``kafka-share-eos soak`` for three minutes: one pipeline with four share consumers on a
three-node Apache Kafka, every durable path on the S3 server, a steady producer and a fault of
every family (the pipeline SIGKILLed, a Kafka node SIGKILLed and started again, PostgreSQL
SIGKILLed and started again, the store blackholed, 503s from the store, OPTIMIZE and VACUUM of
the Delta tables), then drained: every record exactly once, and memory, journal files and
ledger rows at the end within their limits of their levels after a shorter warm-up. The hour
of the committed run (docs/results/soak.json) is the same command with its defaults."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kafka_share_eos.cli.main import app
from kafka_share_eos.proving_ground.soak.strikes import STRIKES

pytestmark = [pytest.mark.spark, pytest.mark.postgres, pytest.mark.timeout(1200)]


def test_minutes_of_every_fault_are_exactly_once_and_bounded(tmp_path: Path) -> None:
    saved = tmp_path / "soak.json"
    outcome = CliRunner().invoke(app, [
        "soak", "--minutes", "2.5", "--backlog", "1200", "--rate", "10", "--warm-up", "8",
        "--fault-every", "10", "--fault-seconds", "5", "--save", str(saved),
        "--workdir", str(tmp_path / "work"),
    ])

    # A soak that could not start saves nothing: its output and exception say why.
    assert saved.exists(), f"{outcome.output}\n{outcome.exception!r}"
    result = json.loads(saved.read_text())
    assert outcome.exit_code == 0, outcome.output + json.dumps(result["checks"])
    assert result["checks"] == {} and result["passed"]
    assert (result["duplicates"], result["lost"]) == (0, 0)
    assert result["records"] > 1200 + 10 * 120
    assert set(result["faults"]) == set(STRIKES)
    # Every poison record the producer sent went to the dead letters in PostgreSQL.
    assert result["dead_lettered"] == result["records"] // 2000
    assert result["ledger_rows"]["end"] <= 1.2 * result["ledger_rows"]["warm_up"]
    assert saved.with_suffix(".svg").exists()
    # Quiet when all is well: a line per fault and the summary.
    lines = outcome.output.strip().splitlines()
    assert len(lines) == len(result["fault_log"]) + 1, outcome.output
    assert [line.split()[1].rstrip(":") for line in lines[:-1]] == [
        fault["kind"] for fault in result["fault_log"]]
