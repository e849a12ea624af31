"""Recovery rules and configuration errors of the two-phase-commit coordinator.

The recovery rules are pure logic and are checked here against an in-memory participant; the
same rules run end to end against Postgres and Delta in ``test_two_phase_crash.py``.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pyarrow as pa
import pytest
from sqlalchemy import create_engine

from kafka_share_eos.proving_ground.launchers.postgres import PostgresServer
from kafka_share_eos.twophase import (
    Decision,
    FileDecisionLog,
    Outcome,
    Token,
    Transaction,
    TransactionCoordinator,
    resolve_in_doubt,
)
from kafka_share_eos.twophase.postgres import (
    PostgresParticipant,
    PreparedTransactionsDisabledError,
)


class MemoryParticipant:
    """Keeps prepared tokens in a dict; enough to observe what recovery decides."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.prepared: dict[str, Token] = {}
        self.committed: list[str] = []
        self.aborted: list[str] = []

    def prepare(self, rows: pa.Table, txn: Transaction) -> Token:
        token = Token(self.name, txn.txid, rows.num_rows, {"rows": rows.num_rows})
        self.prepared[txn.txid] = token
        return token

    def commit(self, token: Token) -> None:
        self.prepared.pop(token.txid, None)
        self.committed.append(token.txid)

    def abort(self, token: Token) -> None:
        self.prepared.pop(token.txid, None)
        self.aborted.append(token.txid)

    def recover(self, prefix: str) -> list[Token]:
        return [t for txid, t in self.prepared.items() if txid.startswith(prefix)]


def test_only_tokens_listed_in_a_commit_decision_are_committed(tmp_path: Path) -> None:
    log = FileDecisionLog(str(tmp_path))
    a, b = MemoryParticipant("a"), MemoryParticipant("b")
    rows = pa.table({"k": [1]})
    decided = Transaction.new("app", 1, ["k"])
    undecided = Transaction.new("app", 2, ["k"])
    other_app = Transaction.new("app2", 1, ["k"])
    tokens = (a.prepare(rows, decided), b.prepare(rows, decided))
    log.write(Decision(decided.txid, 1, Outcome.COMMIT, tokens[:1]))  # lists a's token only
    a.prepare(rows, undecided)
    a.prepare(rows, other_app)

    report = resolve_in_doubt(log, [a, b], "kse:app:")

    assert a.committed == [decided.txid]
    assert sorted(a.aborted) == sorted([undecided.txid])
    assert b.aborted == [decided.txid]
    assert list(a.prepared) == [other_app.txid]
    assert report.resolved == 3
    assert log.txids("kse:app:") == []


def test_decision_log_round_trip_and_prefixes(tmp_path: Path) -> None:
    log = FileDecisionLog(str(tmp_path / "nested" / "log"))
    token = Token("p", "kse:app:4:abc", 2, {"gid": "kse:app:4:abc:p"})
    decision = Decision("kse:app:4:abc", 4, Outcome.COMMIT, (token,))
    log.write(decision)
    log.write(Decision("kse:app2:1:def", 1, Outcome.COMMIT, ()))

    assert log.read("kse:app:4:abc") == decision
    assert log.read("kse:app:5:abc") is None
    assert log.txids("kse:app:") == ["kse:app:4:abc"]
    log.delete("kse:app:4:abc")
    log.delete("kse:app:4:abc")
    assert log.txids("kse:app:") == []


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


@pytest.mark.postgres
@pytest.mark.timeout(120)
def test_server_without_prepared_transactions_gives_a_clear_error() -> None:
    server = PostgresServer(max_prepared_transactions=1)
    # The fixture refuses 0 (it exists for two-phase commit); this test needs exactly that.
    server._settings["max_prepared_transactions"] = "0"
    with server:
        url = server.create_database()
        participant = PostgresParticipant(
            create_engine(url), "SELECT :amount", name="payments"
        )
        rows = pa.table({"topic": ["t"], "partition": [0], "offset": [0], "amount": [1]})
        with pytest.raises(PreparedTransactionsDisabledError) as error:
            participant.prepare(rows, Transaction.new("app", 0, ["topic", "partition", "offset"]))
    message = str(error.value)
    assert "max_prepared_transactions = 0" in message
    assert "'payments'" in message
    assert "restart" in message
