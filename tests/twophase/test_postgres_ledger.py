"""The Postgres participant's ledger on a real server: a replayed or overlapping batch claims only
its new keys, keys without array literals are claimed as lists, and a claim waiting on keys
another transaction prepared skips those it commits."""

from __future__ import annotations

import pyarrow as pa
import pytest
from helpers.accounts import (
    INCREMENT,
    balances,
    create_accounts,
    expected_balances,
    payments,
    prepared_gids,
    wait_for_lock_waiter,
)
from helpers.pauses import Background
from helpers.postgres_participants import KEYS, keys_of, run_sql

from kafka_share_eos.twophase import Transaction
from kafka_share_eos.twophase.postgres import PostgresParticipant

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(120)]


def test_a_replayed_or_overlapping_batch_applies_only_its_new_records(postgres_url: str) -> None:
    create_accounts(postgres_url)
    participant = PostgresParticipant(postgres_url, INCREMENT)
    records = payments(20)

    def apply(rows: pa.Table, batch_id: int) -> int:
        token = participant.prepare(rows, Transaction.new("pay", batch_id, KEYS))
        participant.commit(token)
        return token.rows_written

    assert apply(records.slice(0, 10), 0) == 10
    replay = participant.prepare(records.slice(0, 10), Transaction.new("pay", 0, KEYS))
    # Nothing new: no prepared transaction is left to resolve, and its commit does nothing.
    assert (replay.rows_written, replay.data["gid"]) == (0, None)
    assert prepared_gids(postgres_url) == []
    participant.commit(replay)
    # Half known: the claim of new keys leaves out the five applied ones.
    assert apply(records.slice(5, 10), 1) == 5
    # The batch after an overlap claims its keys the same way, all of them new.
    assert apply(records.slice(15, 5), 2) == 5

    assert balances(postgres_url) == expected_balances(records)
    assert participant.applied(keys_of(records)) == [True] * 20


def test_binary_keys_and_a_per_record_statement_without_array_literals_apply_once(
    postgres_url: str,
) -> None:
    run_sql(postgres_url, "CREATE TABLE audit (k bytea PRIMARY KEY, amount bigint)")
    participant = PostgresParticipant(postgres_url, "INSERT INTO audit VALUES (:key, :amount)",
                                      ledger_table="binary_keys")
    keys = [b"\x00k%d" % i for i in range(8)]
    records = pa.table({"key": pa.array(keys, pa.binary()),
                        "amount": pa.array(range(8), pa.int64())})

    for batch_id, rows in enumerate([records.slice(0, 5), records.slice(3, 5), records]):
        participant.commit(participant.prepare(rows, Transaction.new("bin", batch_id, ["key"])))

    assert participant.ledger_table == "binary_keys"
    assert sorted(run_sql(postgres_url, "SELECT k, amount FROM audit")) == [
        (k, i) for i, k in enumerate(keys)]
    assert sorted(bytes(k) for (k,) in run_sql(postgres_url, "SELECT key FROM binary_keys")) == (
        keys)


def test_a_prepare_waiting_on_anothers_prepared_keys_skips_those_it_commits(
    postgres_url: str,
) -> None:
    create_accounts(postgres_url)
    records = payments(9)
    first, second = (PostgresParticipant(postgres_url, INCREMENT) for _ in range(2))
    held = first.prepare(records.slice(0, 6), Transaction.new("a", 0, KEYS))

    waiting = Background(
        lambda: second.prepare(records.slice(3, 6), Transaction.new("b", 0, KEYS)))
    wait_for_lock_waiter(postgres_url)
    first.commit(held)
    token = waiting.outcome()
    second.commit(token)

    assert token.rows_written == 3
    assert balances(postgres_url) == expected_balances(records)
