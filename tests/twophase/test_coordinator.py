"""The two-phase-commit coordinator against in-memory participants: configuration errors, empty
batches, when it runs a recovery pass, participants preparing at the same time, and a failed
prepare rolling back the others."""

from __future__ import annotations

import threading
from pathlib import Path

import pyarrow as pa
import pytest
from helpers.participants import MemoryParticipant

from kafka_share_eos.twophase import FileDecisionLog, Token, Transaction, TransactionCoordinator


def test_coordinator_rejects_bad_configuration(tmp_path: Path) -> None:
    log = FileDecisionLog(str(tmp_path))
    with pytest.raises(ValueError, match="unique"):
        TransactionCoordinator(log, [MemoryParticipant("x"), MemoryParticipant("x")], "app")
    with pytest.raises(ValueError, match="app_id"):
        TransactionCoordinator(log, [MemoryParticipant("x")], "bad app:id")
    with pytest.raises(ValueError, match="participants"):
        TransactionCoordinator(log, [], "app")


def test_nothing_to_apply_writes_no_decision(tmp_path: Path) -> None:
    log = FileDecisionLog(str(tmp_path))
    participant = MemoryParticipant("m")
    coordinator = TransactionCoordinator(log, [participant], "app")
    result = coordinator.run(pa.table({"k": pa.array([], pa.int64())}), 0, ["k"])
    assert result.tokens[0].rows_written == 0
    assert participant.committed == []
    assert log.txids("kse:") == []


class CountingParticipant(MemoryParticipant):
    """Counts recovery passes; its commit fails while ``fail_commits`` is set."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.passes = 0
        self.fail_commits = False

    def commit(self, token: Token) -> None:
        if self.fail_commits:
            raise ConnectionError("the participant went away")
        super().commit(token)

    def recover(self, prefix: str) -> list[Token]:
        self.passes += 1
        return super().recover(prefix)


def test_a_batch_after_one_that_did_not_finish_recovers_first(tmp_path: Path) -> None:
    """Batches that finish leave nothing in doubt: the next one skips the recovery pass."""
    participant = CountingParticipant("m")
    coordinator = TransactionCoordinator(FileDecisionLog(str(tmp_path)), [participant], "app")
    rows = pa.table({"k": [1]})
    coordinator.run(rows, 0, ["k"])
    coordinator.run(rows, 1, ["k"])
    assert participant.passes == 1  # before the first batch only

    participant.fail_commits = True
    with pytest.raises(ConnectionError):
        coordinator.run(rows, 2, ["k"])
    participant.fail_commits = False
    [stuck] = participant.prepared.values()
    result = coordinator.run(rows, 3, ["k"])

    assert participant.passes == 2
    assert [t.txid for t in result.recovery.committed] == [stuck.txid]
    assert participant.committed[-2:] == [stuck.txid, result.txid]
    coordinator.run(rows, 4, ["k"])
    assert participant.passes == 2


def test_batches_prepared_elsewhere_always_recover_first(tmp_path: Path) -> None:
    participant = CountingParticipant("m")
    coordinator = TransactionCoordinator(FileDecisionLog(str(tmp_path)), [participant], "app")
    rows = pa.table({"k": [1]})
    for batch_id in range(3):
        coordinator.run_with(batch_id, ["k"], lambda p, txn: [p.prepare(rows, txn)])
    assert participant.passes == 3


class MeetingParticipant(MemoryParticipant):
    """Prepares only once every participant of the batch is preparing too."""

    def __init__(self, name: str, barrier: threading.Barrier) -> None:
        super().__init__(name)
        self.barrier = barrier

    def prepare(self, rows: pa.Table, txn: Transaction) -> Token:
        self.barrier.wait()
        return super().prepare(rows, txn)


def test_participants_prepare_at_the_same_time(tmp_path: Path) -> None:
    barrier = threading.Barrier(3, timeout=30)
    participants = [MeetingParticipant(name, barrier) for name in ("a", "b", "c")]
    coordinator = TransactionCoordinator(FileDecisionLog(str(tmp_path)), participants, "app")
    result = coordinator.run(pa.table({"k": [1, 2]}), 0, ["k"])
    assert [t.participant for t in result.tokens] == ["a", "b", "c"]
    assert all(p.committed == [result.txid] for p in participants)


def test_a_failed_prepare_rolls_back_the_others_after_they_finished(tmp_path: Path) -> None:
    """The first participant fails while the second is still preparing."""
    second_started, first_failed = threading.Event(), threading.Event()

    class Failing(MemoryParticipant):
        def prepare(self, rows: pa.Table, txn: Transaction) -> Token:
            second_started.wait(timeout=30)
            first_failed.set()
            raise ConnectionError("the database went away")

    class Slow(MemoryParticipant):
        def prepare(self, rows: pa.Table, txn: Transaction) -> Token:
            second_started.set()
            first_failed.wait(timeout=30)
            return super().prepare(rows, txn)

    slow = Slow("slow")
    coordinator = TransactionCoordinator(
        FileDecisionLog(str(tmp_path)), [Failing("failing"), slow], "app"
    )
    with pytest.raises(ConnectionError):
        coordinator.run(pa.table({"k": [1]}), 0, ["k"])
    assert slow.prepared == {} and len(slow.aborted) == 1
