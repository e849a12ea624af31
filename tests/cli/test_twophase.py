"""``kafka-share-eos twophase recover`` refusing what it cannot use (a missing decision log, a
storage option that is no pair, Iceberg tables without their catalog), and resolving what an
Iceberg participant staged."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.accounts import payments, record_keys
from helpers.iceberg import catalog_config, offsets

from kafka_share_eos import IcebergParticipant
from kafka_share_eos.twophase import Decision, FileDecisionLog, Outcome, Transaction

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(180)]

KEYS = ["topic", "partition", "offset"]


def test_recover_command_refuses_a_missing_decision_log(tmp_path: Path) -> None:
    command = subprocess.run(
        [sys.executable, "-m", "kafka_share_eos.cli.main", "twophase", "recover",
         "--app-id", "A", "--decision-log", str(tmp_path / "nowhere"),
         "--delta", str(tmp_path / "table")],
        # Wide enough that the usage box never wraps the path in the message.
        capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "COLUMNS": "400"},
    )
    assert command.returncode == 2
    assert "nowhere" in command.stderr and "--decision-log" in command.stderr
    assert not (tmp_path / "nowhere").exists()


def test_recover_command_names_a_storage_option_that_is_no_pair(tmp_path: Path) -> None:
    command = subprocess.run(
        [sys.executable, "-m", "kafka_share_eos.cli.main", "twophase", "recover",
         "--app-id", "A", "--decision-log", str(tmp_path), "--delta", str(tmp_path / "table"),
         "-o", "region"],
        capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "COLUMNS": "400"},
    )
    assert command.returncode == 2
    assert "'region'" in command.stderr and "--storage-option" in command.stderr


def test_recover_command_commits_and_rolls_back_what_an_iceberg_participant_staged(
    request: pytest.FixtureRequest, tmp_path: Path,
) -> None:
    config = catalog_config(request, tmp_path, "sqlite")
    log = FileDecisionLog(str(tmp_path / "decisions"))
    participant = IcebergParticipant("db.payments", catalog=config)
    decided_txn, records = Transaction.new("A", 0, KEYS), payments(6)
    decided = participant.prepare(records.slice(0, 4), decided_txn)
    log.write(Decision(decided_txn.txid, 0, Outcome.COMMIT, (decided,)))
    undecided = participant.prepare(records.slice(4, 2), Transaction.new("A", 1, KEYS))
    catalog = [f"--iceberg-catalog={key}={value}" for key, value in config.items()]

    command = subprocess.run(
        [sys.executable, "-m", "kafka_share_eos.cli.main", "twophase", "recover",
         "--app-id", "A", "--decision-log", str(tmp_path / "decisions"),
         "--iceberg", "db.payments", *catalog],
        capture_output=True, text=True, timeout=60, check=False,
    )

    assert command.returncode == 0, command.stderr
    assert sorted(command.stdout.splitlines()) == sorted([
        f"{decided_txn.txid}: committed (its COMMIT decision was stored): iceberg",
        f"{undecided.txid}: rolled back (ABORT decided here): iceberg",
    ])
    assert offsets(config, "db.payments") == record_keys(records.slice(0, 4))
    assert participant.recover("kse:A:") == []


def test_recover_command_asks_for_the_catalog_of_iceberg_tables(tmp_path: Path) -> None:
    command = subprocess.run(
        [sys.executable, "-m", "kafka_share_eos.cli.main", "twophase", "recover",
         "--app-id", "A", "--decision-log", str(tmp_path), "--iceberg", "db.payments"],
        capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "COLUMNS": "400"},
    )
    assert command.returncode == 2
    assert "--iceberg-catalog" in command.stderr
