"""The Postgres participant on a real server: a prepared effect stays invisible until COMMIT
PREPARED, lands once, and its keys stay in the ledger; an abort leaves nothing; a transaction the
server rolled back is prepared again; participants made from what is prepared finish it; and a
copy in another process prepares over its own connection."""

from __future__ import annotations

import pickle

import pyarrow as pa
import pytest
import sqlalchemy as sa
from helpers.accounts import (
    INCREMENT,
    balances,
    create_accounts,
    expected_balances,
    payments,
    prepared_gids,
)
from helpers.postgres_participants import KEYS, keys_of, run_sql

from kafka_share_eos.errors import ConfigurationError, DatabaseUnavailableError
from kafka_share_eos.twophase import Transaction, TwoPhaseCommitError, txid_prefix
from kafka_share_eos.twophase.postgres import PostgresParticipant, prepared_participants

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(120)]


def test_a_prepared_effect_stays_invisible_until_it_is_committed_once(postgres_url: str) -> None:
    create_accounts(postgres_url)
    participant = PostgresParticipant(postgres_url, INCREMENT)
    records = payments(9)
    txn = Transaction.new("pay", 0, KEYS)

    token = participant.prepare(records, txn)

    assert (token.participant, token.txid, token.rows_written) == ("postgres", txn.txid, 9)
    assert token.data["gid"] == participant.gid(txn.txid) == f"{txn.txid}:postgres"
    assert prepared_gids(postgres_url) == [token.data["gid"]]
    assert set(balances(postgres_url).values()) == {0}
    assert participant.applied(keys_of(records)) == [False] * 9

    participant.commit(token)
    participant.commit(token)  # a repeated commit finds the transaction committed

    assert balances(postgres_url) == expected_balances(records)
    assert participant.applied(keys_of(records)) == [True] * 9
    assert prepared_gids(postgres_url) == []
    assert run_sql(postgres_url, "SELECT count(*) FROM kse_ledger_postgres") == [(9,)]


def test_an_aborted_prepare_leaves_no_effect_and_frees_its_keys(postgres_url: str) -> None:
    create_accounts(postgres_url)
    participant = PostgresParticipant(postgres_url, INCREMENT)
    records = payments(6)

    aborted = participant.prepare(records, Transaction.new("pay", 0, KEYS))
    participant.abort(aborted)
    participant.abort(aborted)  # already gone: nothing to do

    assert prepared_gids(postgres_url) == []
    assert set(balances(postgres_url).values()) == {0}
    assert participant.applied(keys_of(records)) == [False] * 6
    again = participant.prepare(records, Transaction.new("pay", 1, KEYS))
    assert again.rows_written == 6
    participant.commit(again)
    assert balances(postgres_url) == expected_balances(records)


def test_prepared_participants_finish_transactions_without_knowing_their_effect(
    postgres_url: str,
) -> None:
    create_accounts(postgres_url)
    run_sql(postgres_url, "CREATE TABLE audit (account int, amount bigint)")

    def audit(conn: sa.Connection, rows: pa.Table) -> None:
        conn.execute(sa.text("INSERT INTO audit VALUES (:account, :amount)"),
                     rows.select(["account", "amount"]).to_pylist())

    records = payments(5)
    txn = Transaction.new("res", 3, KEYS)
    PostgresParticipant(postgres_url, INCREMENT, name="balances").prepare(records, txn)
    PostgresParticipant(postgres_url, audit, name="audit").prepare(records, txn)

    resolvers = prepared_participants(postgres_url, txid_prefix("res"))

    assert [p.name for p in resolvers] == ["audit", "balances"]
    for resolver in resolvers:
        (token,) = resolver.recover(txid_prefix("res"))
        resolver.commit(token)
    assert balances(postgres_url) == expected_balances(records)
    assert sorted(run_sql(postgres_url, "SELECT account, amount FROM audit")) == sorted(
        zip(records["account"].to_pylist(), records["amount"].to_pylist(), strict=True))
    with pytest.raises(TwoPhaseCommitError, match="cannot prepare"):
        resolvers[0].prepare(payments(7).slice(5), Transaction.new("res", 4, KEYS))
    assert prepared_gids(postgres_url) == []


def test_a_prepare_the_server_rolled_back_whole_is_run_again_once(postgres_url: str) -> None:
    create_accounts(postgres_url)
    calls: list[int] = []

    def effect(conn: sa.Connection, rows: pa.Table) -> None:
        calls.append(rows.num_rows)
        if len(calls) == 1:  # the server picks this transaction as a serialization victim
            conn.exec_driver_sql(
                "DO $$ BEGIN RAISE EXCEPTION 'could not serialize' USING ERRCODE = '40001';"
                " END $$"
            )
        conn.execute(sa.text(INCREMENT), rows.to_pylist())

    participant = PostgresParticipant(postgres_url, effect)
    records = payments(8)
    participant.commit(participant.prepare(records, Transaction.new("retry", 0, KEYS)))

    assert calls == [8, 8]
    assert balances(postgres_url) == expected_balances(records)


def test_an_effect_that_fails_otherwise_fails_the_prepare_and_leaves_nothing(
    postgres_url: str,
) -> None:
    create_accounts(postgres_url)
    participant = PostgresParticipant(
        postgres_url, "UPDATE accounts SET balance = balance / (:amount - :amount) WHERE id = 0"
    )
    records = payments(4)

    with pytest.raises(sa.exc.DBAPIError, match="division by zero"):
        participant.prepare(records, Transaction.new("fail", 0, KEYS))

    assert prepared_gids(postgres_url) == []
    assert participant.applied(keys_of(records)) == [False] * 4


def test_a_copy_sent_to_another_process_prepares_over_its_own_connection(
    postgres_url: str,
) -> None:
    create_accounts(postgres_url)
    engine = sa.create_engine(postgres_url)
    participant = PostgresParticipant(engine, INCREMENT)
    records = payments(6)
    txn = Transaction.new("copy", 0, KEYS)

    copy = pickle.loads(pickle.dumps(participant))
    token = copy.prepare(records, txn)
    participant.commit(token)

    assert balances(postgres_url) == expected_balances(records)
    engine.dispose()


def test_names_are_checked_and_an_unreachable_server_is_named_without_its_password() -> None:
    with pytest.raises(ConfigurationError, match="name must be"):
        PostgresParticipant("postgresql+psycopg://u@localhost/db", INCREMENT, name="two words")
    participant = PostgresParticipant("postgresql+psycopg://u:secret@127.0.0.1:1/db", INCREMENT)

    assert participant.ledger_table == "kse_ledger_postgres"
    with pytest.raises(DatabaseUnavailableError, match=r"listing .* 'kse:x:'.*u:\*\*\*@") as error:
        participant.recover("kse:x:")
    assert "secret" not in str(error.value)


def test_listing_what_an_unreachable_database_prepared_names_the_database() -> None:
    # Nothing listens on port 1: the toolkit's error, not the driver's, names it.
    with pytest.raises(DatabaseUnavailableError, match=r"127\.0\.0\.1:1.*never opened"):
        prepared_participants("postgresql+psycopg://app@127.0.0.1:1/shop", txid_prefix("app"))
