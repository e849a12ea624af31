"""Recovery of transactions left in doubt, and a server without prepared transactions.

The recovery rules are pure logic and are checked here against an in-memory participant; the
same rules run end to end against Postgres and Delta in ``tests/crashes/test_two_phase_commit.py``.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from helpers.participants import MemoryParticipant
from sqlalchemy import create_engine

from kafka_share_eos.proving_ground.launchers.postgres import PostgresServer
from kafka_share_eos.twophase import (
    Decision,
    FileDecisionLog,
    Outcome,
    Transaction,
    resolve_in_doubt,
)
from kafka_share_eos.twophase.postgres import (
    PostgresParticipant,
    PreparedTransactionsDisabledError,
)


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
