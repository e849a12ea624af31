"""Crash the coordinator at every dangerous point, then let a fresh one recover.

The coordinator runs in a child process with ``KSE_CRASH_AT`` set, so it dies by SIGKILL at the
named point with Postgres transactions prepared, Delta files staged, a decision logged or not.
A new coordinator in this process must then bring both participants to the same outcome, leave
no prepared transaction behind, and apply a redelivery of the batch exactly once in total.

Run as a script, this file is the child
(``PYTHONPATH=tests python tests/crashes/test_two_phase_commit.py URL DELTA LOG``), where LOG is
a directory for a file decision log or ``postgres`` for a decision table in the database.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from helpers import accounts
from helpers.batches import source_rows
from helpers.paths import SHARED

from kafka_share_eos.faults import CRASH_AT_ENV
from kafka_share_eos.strategies.two_phase_commit import TwoPhaseCommitCoordinator
from kafka_share_eos.twophase import DecisionLog, FileDecisionLog
from kafka_share_eos.twophase.delta import DeltaParticipant
from kafka_share_eos.twophase.postgres import PostgresParticipant
from kafka_share_eos.twophase.postgres_log import PostgresDecisionLog

APP_ID = "crashy"
BATCH_ID = 3

# Crash point -> (what the crash leaves: Postgres prepared, Delta staged, decision logged, where
# None is either: the participants prepare at the same time; whether the batch must be visible
# after recovery).
CRASH_POINTS: dict[str, tuple[tuple[bool | None, ...], bool]] = {
    "2pc.postgres.before_prepare": ((False, None, False), False),
    "2pc.between_prepares": ((True, None, False), False),
    "2pc.delta.after_stage": ((None, True, False), False),
    "2pc.after_prepare": ((True, True, False), False),
    "2pc.after_decision": ((True, True, True), True),
    "2pc.between_commits": ((False, True, True), True),
    "2pc.after_commit": ((False, False, True), True),
}


def decision_log(url: str, log: str) -> DecisionLog:
    """``log`` is ``postgres`` (a table in the database at ``url``) or a directory."""
    return PostgresDecisionLog(url) if log == "postgres" else FileDecisionLog(log)


def make_coordinator(url: str, delta_path: str, log: str) -> TwoPhaseCommitCoordinator:
    return TwoPhaseCommitCoordinator(
        log=decision_log(url, log),
        participants=[PostgresParticipant(url, accounts.INCREMENT), DeltaParticipant(delta_path)],
        app_id=APP_ID,
    )


def batch() -> pa.Table:
    return accounts.payments(40, seed=11)


def staged_manifests(delta_path: str) -> list[str]:
    staging = Path(delta_path) / "_kse_2pc"
    return sorted(p.name for p in staging.glob("*.json")) if staging.exists() else []


@pytest.mark.postgres
@pytest.mark.timeout(180)
@pytest.mark.parametrize(
    ("point", "log"),
    [*((point, "files") for point in CRASH_POINTS),
     ("2pc.after_prepare", "postgres"), ("2pc.after_decision", "postgres")],
)
def test_recovery_after_crash_is_all_or_nothing(
    point: str, log: str, postgres_url: str, tmp_path: Path
) -> None:
    accounts.create_accounts(postgres_url)
    delta_path = str(tmp_path / "delta")
    log_location = "postgres" if log == "postgres" else str(tmp_path / "decisions")
    # The Delta table already holds an earlier batch, as it would in a running pipeline.
    earlier = TwoPhaseCommitCoordinator(
        log=decision_log(postgres_url, log_location), participants=[DeltaParticipant(delta_path)],
        app_id="earlier",
    )
    earlier.apply(source_rows(topic="other", partition=9, offset=[0],
                              account=pa.array([0], pa.int32()),
                              amount=pa.array([0], pa.int64())), 0)

    child = subprocess.run(
        [sys.executable, __file__, postgres_url, delta_path, log_location],
        env={**os.environ, CRASH_AT_ENV: point,
             "PYTHONPATH": str(SHARED)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    left_behind, committed = CRASH_POINTS[point]
    decisions = decision_log(postgres_url, log_location)
    found = (
        bool(accounts.prepared_gids(postgres_url)),
        bool(staged_manifests(delta_path)),
        bool(decisions.txids("kse:")),
    )
    assert all(expected in (None, f) for expected, f in zip(left_behind, found, strict=True)), found

    # A fresh coordinator resolves what the dead one left as soon as it is created.
    coordinator = make_coordinator(postgres_url, delta_path, log_location)
    records = batch()
    expected = accounts.expected_balances(records)
    zero = dict.fromkeys(expected, 0)
    assert accounts.prepared_gids(postgres_url) == []
    assert staged_manifests(delta_path) == []
    assert decisions.txids("kse:") == []
    assert accounts.balances(postgres_url) == (expected if committed else zero)
    batch_keys = sorted(
        zip(records["partition"].to_pylist(), records["offset"].to_pylist(), strict=True)
    )
    assert accounts.delta_keys(delta_path) == sorted([(9, 0), *(batch_keys if committed else [])])

    # The batch is redelivered (Spark re-runs it): it takes effect exactly once in total.
    coordinator.apply(records, BATCH_ID)
    assert accounts.balances(postgres_url) == expected
    assert accounts.delta_keys(delta_path) == sorted([(9, 0), *batch_keys])
    assert accounts.prepared_gids(postgres_url) == []


def _child(url: str, delta_path: str, log: str) -> None:
    make_coordinator(url, delta_path, log).apply(batch(), BATCH_ID)


if __name__ == "__main__":
    _child(*sys.argv[1:4])
