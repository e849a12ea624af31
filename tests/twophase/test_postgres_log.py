"""The decision log in a PostgreSQL table: a decision is stored once, the first one wins against
any process, it is listed by prefix and forgotten on request, a later format is refused, and a
recovery pass over it commits what a dead coordinator decided."""

from __future__ import annotations

import pyarrow as pa
import pytest
import sqlalchemy as sa
from helpers.participants import MemoryParticipant

from kafka_share_eos.errors import UnsupportedFormatError
from kafka_share_eos.twophase import (
    Decision,
    Outcome,
    Token,
    Transaction,
    TransactionCoordinator,
    txid_prefix,
)
from kafka_share_eos.twophase.postgres_log import PostgresDecisionLog

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(120)]


def commit_of(txid: str, *participants: str) -> Decision:
    tokens = tuple(Token(name, txid, 2, {"gid": f"{txid}:{name}"}) for name in participants)
    return Decision(txid, int(txid.split(":")[2]), Outcome.COMMIT, tokens)


def test_the_first_decision_stored_wins_for_every_process(postgres_url: str) -> None:
    log = PostgresDecisionLog(postgres_url)
    other_process = PostgresDecisionLog(sa.create_engine(postgres_url))
    commit = commit_of("kse:pay:4:abc", "postgres", "delta")

    assert log.read(commit.txid) is None
    assert log.write(commit) == commit
    # Whoever resolves the transaction later finds the COMMIT, not its own ABORT.
    assert other_process.write(Decision.abort(commit.txid)) == commit
    assert other_process.read(commit.txid) == commit
    abort = Decision.abort("kse:pay:5:def")
    assert other_process.write(abort) == abort
    assert log.write(commit_of("kse:pay:5:def", "postgres")) == abort


def test_decisions_are_listed_by_prefix_in_order_and_forgotten_once_resolved(
    postgres_url: str,
) -> None:
    log = PostgresDecisionLog(postgres_url)
    for txid in ("kse:pay:9:c", "kse:pay:10:a", "kse:payroll:1:b", "kse:other:1:d"):
        log.write(commit_of(txid, "postgres"))

    assert log.txids(txid_prefix("pay")) == ["kse:pay:10:a", "kse:pay:9:c"]
    assert log.txids("kse:") == ["kse:other:1:d", "kse:pay:10:a", "kse:pay:9:c",
                                 "kse:payroll:1:b"]
    log.delete("kse:pay:9:c")
    log.delete("kse:pay:9:c")  # already gone: nothing to do
    assert log.read("kse:pay:9:c") is None
    assert log.txids(txid_prefix("pay")) == ["kse:pay:10:a"]


def test_a_log_table_of_any_name_is_created_once_and_holds_the_decisions(
    postgres_url: str,
) -> None:
    PostgresDecisionLog(postgres_url, table="Two-Phase Decisions")
    log = PostgresDecisionLog(postgres_url, table="Two-Phase Decisions")
    log.write(commit_of("kse:pay:1:abc", "postgres"))

    engine = sa.create_engine(postgres_url)
    with engine.connect() as conn:
        stored = conn.exec_driver_sql(
            'SELECT txid, decision->>\'outcome\', decision->\'tokens\'->0->>\'participant\''
            ' FROM "Two-Phase Decisions"'
        ).all()
        default_exists = sa.inspect(conn).has_table("kse_2pc_decisions")
    engine.dispose()
    assert [tuple(row) for row in stored] == [("kse:pay:1:abc", "commit", "postgres")]
    assert not default_exists


def test_a_decision_of_a_later_format_is_refused_naming_the_table_and_txid(
    postgres_url: str,
) -> None:
    log = PostgresDecisionLog(postgres_url)
    log.write(commit_of("kse:pay:1:abc", "postgres"))
    engine = sa.create_engine(postgres_url)
    with engine.begin() as conn:
        conn.exec_driver_sql(
            "UPDATE kse_2pc_decisions SET decision = jsonb_set(decision, '{format}', '2')"
        )
    engine.dispose()

    with pytest.raises(UnsupportedFormatError,
                       match=r"table kse_2pc_decisions, txid 'kse:pay:1:abc'.*format '2'"):
        log.read("kse:pay:1:abc")


def test_recovery_commits_what_the_logged_decision_lists_and_rolls_back_the_rest(
    postgres_url: str,
) -> None:
    log = PostgresDecisionLog(postgres_url)
    participant = MemoryParticipant("memory")
    decided = participant.prepare(pa.table({"k": [1, 2, 3]}), Transaction.new("pay", 0, ["k"]))
    undecided = participant.prepare(pa.table({"k": [4, 5]}), Transaction.new("pay", 1, ["k"]))
    log.write(Decision(decided.txid, 0, Outcome.COMMIT, (decided,)))

    report = TransactionCoordinator(log, [participant], "pay").recover()

    assert participant.committed == [decided.txid]
    assert participant.aborted == [undecided.txid]
    assert report.aborts_written == (undecided.txid,)
    assert log.txids(txid_prefix("pay")) == []
