"""Prepared transactions by gid: what a gid names, and, on a real server, another process finding
and finishing only its own participant's prepared work."""

from __future__ import annotations

import pytest
from helpers.accounts import payments, prepared_gids, record_keys
from helpers.postgres_participants import KEYS, run_sql

from kafka_share_eos.twophase import Transaction, txid_prefix
from kafka_share_eos.twophase.postgres import PostgresParticipant
from kafka_share_eos.twophase.postgres_prepared import PreparedGid, gid_of, parse_gid


def test_a_gid_names_its_transaction_participant_and_part_and_other_gids_name_none() -> None:
    txid = Transaction.new("app", 3, KEYS).txid

    assert parse_gid(gid_of(txid, "audit")) == PreparedGid(txid, "audit", "")
    assert parse_gid(gid_of(txid, "audit", "p3a0")) == PreparedGid(txid, "audit", "p3a0")
    assert parse_gid("a gid of another tool") is None
    assert parse_gid(f"{gid_of(txid, 'audit', 'p3a0')}:more") is None


@pytest.mark.postgres
@pytest.mark.timeout(120)
def test_another_process_recovers_and_finishes_only_its_own_prepared_work(
    postgres_url: str,
) -> None:
    # Inserts: prepared transactions of one effect hold no row another one waits for.
    run_sql(postgres_url, "CREATE TABLE audit (p int, o bigint)")
    record = "INSERT INTO audit VALUES (:partition, :offset)"
    records = payments(12)
    dead = PostgresParticipant(postgres_url, record)
    committed = dead.prepare(records.slice(0, 4), Transaction.new("rec", 0, KEYS))
    rolled_back = dead.prepare(records.slice(4, 4), Transaction.new("rec", 1, KEYS), part="p3a0")
    other_name = PostgresParticipant(postgres_url, record, name="other")
    other_app = PostgresParticipant(postgres_url, record)
    others = [other_name.prepare(records.slice(8, 2), Transaction.new("rec", 2, KEYS)),
              other_app.prepare(records.slice(10, 2), Transaction.new("else", 0, KEYS))]

    fresh = PostgresParticipant(postgres_url, record)
    found = {(t.txid, t.part): t for t in fresh.recover(txid_prefix("rec"))}

    assert sorted(found) == sorted([(committed.txid, ""), (rolled_back.txid, "p3a0")])
    assert found[(rolled_back.txid, "p3a0")].data["gid"] == rolled_back.data["gid"]
    fresh.commit(found[(committed.txid, "")])
    fresh.abort(found[(rolled_back.txid, "p3a0")])
    assert fresh.recover(txid_prefix("rec")) == []
    assert sorted(prepared_gids(postgres_url)) == sorted(str(t.data["gid"]) for t in others)
    other_name.abort(others[0])
    other_app.abort(others[1])
    assert sorted(run_sql(postgres_url, "SELECT p, o FROM audit")) == record_keys(
        records.slice(0, 4))
