"""An application that prepared a transaction and died must not block the others forever.

Application A prepares a batch and is killed with SIGKILL (``2pc.after_prepare``: prepared, not
decided; ``2pc.after_decision``: COMMIT decided, not committed). Its prepared Postgres
transaction keeps the ledger rows locked, so application B, holding some of the same records
(redelivered to it when A's locks expired), waits. ``kafka-share-eos twophase recover`` resolves
A's transaction from outside: it rolls it back (no decision: ABORT decided first) or commits it
(COMMIT stored), B goes on, and when A comes back and replays its batch every record has taken
effect exactly once.

Run as a script, this file is application A
(``PYTHONPATH=tests python tests/applications/test_two_phase_orphans.py URL DELTA LOG``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from helpers.accounts import (
    INCREMENT,
    balances,
    create_accounts,
    delta_keys,
    expected_balances,
    payments,
    prepared_gids,
    record_keys,
    wait_for_lock_waiter,
)
from helpers.paths import SHARED
from helpers.pauses import Background

from kafka_share_eos.faults import CRASH_AT_ENV
from kafka_share_eos.strategies.two_phase_commit import TwoPhaseCommitCoordinator
from kafka_share_eos.twophase import FileDecisionLog
from kafka_share_eos.twophase.delta import DeltaParticipant
from kafka_share_eos.twophase.delta_staging import STAGING_DIR
from kafka_share_eos.twophase.postgres import PostgresParticipant

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(180)]

RECORDS = 60


def application(app_id: str, url: str, delta_path: str, log: str) -> TwoPhaseCommitCoordinator:
    return TwoPhaseCommitCoordinator(
        log=log,
        participants=[PostgresParticipant(url, INCREMENT), DeltaParticipant(delta_path)],
        app_id=app_id,
    )


def held_by_a() -> pa.Table:
    return payments(RECORDS).slice(0, 40)


def held_by_b() -> pa.Table:
    return payments(RECORDS).slice(20, 40)


@pytest.mark.parametrize(
    ("point", "resolution"),
    [("2pc.after_prepare", "rolled back (ABORT decided here)"),
     ("2pc.after_decision", "committed (its COMMIT decision was stored)")],
)
def test_recover_command_unblocks_the_others_and_every_effect_lands_once(
    point: str, resolution: str, postgres_url: str, tmp_path: Path
) -> None:
    create_accounts(postgres_url)
    delta_path = str(tmp_path / "payments")
    a_log, b_log = str(tmp_path / "A-decisions"), str(tmp_path / "B-decisions")
    killed = subprocess.run(
        [sys.executable, __file__, postgres_url, delta_path, a_log],
        env={**os.environ, CRASH_AT_ENV: point,
             "PYTHONPATH": str(SHARED)},
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert len(prepared_gids(postgres_url)) == 1

    b = application("B", postgres_url, delta_path, b_log)
    run_b = Background(lambda: b.apply(held_by_b(), 0))
    wait_for_lock_waiter(postgres_url)  # B's ledger claims wait on A's prepared rows
    assert run_b.is_alive()

    command = subprocess.run(
        [sys.executable, "-m", "kafka_share_eos.cli.main", "twophase", "recover",
         "--app-id", "A", "--decision-log", a_log, "--postgres", postgres_url,
         "--delta", delta_path, "--storage-option", "timeout=120s"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert command.returncode == 0, command.stderr
    [line] = command.stdout.splitlines()
    assert line.startswith("kse:A:0:") and line.endswith(f"{resolution}: delta, postgres"), line

    run_b.outcome()
    a_committed = point == "2pc.after_decision"
    assert b.last_commit is not None
    [b_postgres] = [t for t in b.last_commit.tokens if t.participant == "postgres"]
    # B's ledger claims waited for A's: B applies in Postgres what A did not commit there, all
    # 40 of its records or the 20 A does not hold. Its Delta part prepared meanwhile and may
    # commit before A's: which of them appends a record to Delta then differs, not that
    # exactly one does (checked below).
    assert b_postgres.rows_written == (20 if a_committed else 40)
    assert prepared_gids(postgres_url) == []

    # A comes back and Spark replays its batch: only what nobody applied takes effect.
    a = application("A", postgres_url, delta_path, a_log)
    assert a.apply(held_by_a(), 0).rows_written == (0 if a_committed else 20)
    everything = payments(RECORDS)
    assert balances(postgres_url) == expected_balances(everything)
    assert delta_keys(delta_path) == record_keys(everything)
    assert FileDecisionLog(a_log).txids("kse:") == []
    assert list((Path(delta_path) / STAGING_DIR).glob("*.json")) == []


if __name__ == "__main__":
    url, delta, log = sys.argv[1:4]
    application("A", url, delta, log).apply(held_by_a(), 0)
