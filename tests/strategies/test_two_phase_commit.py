"""Two-phase commit of non-idempotent effects: account balances in Postgres plus a Delta ledger.

Each record carries an amount added to an account balance (``balance = balance + amount``): a
record applied twice would show in the totals. Batches overlap (redeliveries), repeat rows
inside a batch, and are replayed under the same batch id.
"""

from __future__ import annotations

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
)
from helpers.pickled import copied
from sqlalchemy import create_engine, text

from kafka_share_eos.strategies.two_phase_commit import TwoPhaseCommitCoordinator
from kafka_share_eos.twophase import Token, Transaction, TwoPhaseCommitError
from kafka_share_eos.twophase.delta import DeltaParticipant
from kafka_share_eos.twophase.postgres import PostgresParticipant

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(120)]

KEYS = ["topic", "partition", "offset"]


def test_balances_exact_under_redeliveries_replays_and_in_batch_duplicates(
    postgres_url: str, tmp_path: Path
) -> None:
    create_accounts(postgres_url)
    delta_path = str(tmp_path / "payments")
    records = payments(120)
    coordinator = TwoPhaseCommitCoordinator(
        log=str(tmp_path / "decisions"),
        participants=[
            PostgresParticipant(postgres_url, INCREMENT),
            DeltaParticipant(delta_path),
        ],
        app_id="balances",
    )
    first = records.slice(0, 50)
    # Batch 1 overlaps batch 0 (redeliveries) and repeats some of its own rows.
    second = pa.concat_tables([records.slice(40, 50), records.slice(85, 5)])
    third = pa.concat_tables([records.slice(90, 30), records.slice(0, 20)])

    reports = [
        coordinator.apply(first, 0),
        coordinator.apply(second, 1),
        coordinator.apply(second, 1),  # replay of the same batch id
        coordinator.apply(third, 2),
        coordinator.apply(third, 2),
    ]

    assert balances(postgres_url) == expected_balances(records)
    assert delta_keys(delta_path) == sorted(
        zip(records["partition"].to_pylist(), records["offset"].to_pylist(), strict=True)
    )
    assert [r.rows_written for r in reports] == [50, 40, 0, 30, 0]
    assert [r.duplicates_in_batch for r in reports] == [0, 5, 5, 0, 0]
    assert [r.already_applied for r in reports] == [0, 10, 50, 20, 50]
    assert all(r.write_path == "two-phase-commit" for r in reports)
    assert coordinator.totals.rows_written == records.num_rows
    assert prepared_gids(postgres_url) == []


def test_function_effect_sees_only_new_rows(postgres_url: str, tmp_path: Path) -> None:
    seen: list[list[int]] = []

    def effect(conn: object, rows: pa.Table) -> None:
        seen.append(rows["offset"].to_pylist())

    create_accounts(postgres_url)
    records = payments(9)
    coordinator = TwoPhaseCommitCoordinator(
        log=str(tmp_path / "decisions"),
        participants=[PostgresParticipant(postgres_url, effect)],
        app_id="fn",
    )
    coordinator.apply(records.slice(0, 6), 0)
    coordinator.apply(records, 1)

    assert seen == [[0, 0, 0, 1, 1, 1], [2, 2, 2]]


def test_missing_identity_column_is_named(postgres_url: str, tmp_path: Path) -> None:
    coordinator = TwoPhaseCommitCoordinator(
        log=str(tmp_path / "decisions"),
        participants=[PostgresParticipant(postgres_url, INCREMENT)],
        app_id="missing",
    )
    with pytest.raises(ValueError, match="offset"):
        coordinator.apply(payments(3).drop_columns(["offset"]), 0)


def test_a_copy_first_resolves_what_an_earlier_copy_left_prepared(
    postgres_url: str, tmp_path: Path
) -> None:
    """A Spark Connect server runs a pickled copy; when its worker dies between prepare and
    decision, the query's next run is another copy of the same client-side object, which
    resolved everything in doubt when it was built. The new copy must resolve again before its
    first batch: the dead one's prepared transaction holds the row locks the batch needs."""
    create_accounts(postgres_url)
    delta_path = str(tmp_path / "payments")
    coordinator = TwoPhaseCommitCoordinator(
        log=str(tmp_path / "decisions"),
        participants=[PostgresParticipant(postgres_url, INCREMENT), DeltaParticipant(delta_path)],
        app_id="connect",
    )
    records = payments(12)
    died = copied(coordinator)
    left = Transaction.new("connect", 0, KEYS)
    for participant in died.transactions.participants:
        participant.prepare(records, left)

    rerun = copied(coordinator)
    rerun.apply(records, 0)

    assert rerun.last_commit is not None
    assert {token.txid for token in rerun.last_commit.recovery.aborted} == {left.txid}
    assert balances(postgres_url) == expected_balances(records)
    assert delta_keys(delta_path) == record_keys(records)
    assert prepared_gids(postgres_url) == []


def test_failed_prepare_rolls_back_every_participant(postgres_url: str, tmp_path: Path) -> None:
    """An effect that fails on the second participant leaves nothing behind anywhere."""
    create_accounts(postgres_url)
    coordinator = TwoPhaseCommitCoordinator(
        log=str(tmp_path / "decisions"),
        participants=[
            PostgresParticipant(postgres_url, INCREMENT, name="balances"),
            PostgresParticipant(postgres_url, "UPDATE no_such_table SET x = :amount", name="bad"),
        ],
        app_id="failing",
    )
    with pytest.raises(Exception, match="no_such_table"):
        coordinator.apply(payments(5), 0)

    assert prepared_gids(postgres_url) == []
    assert set(balances(postgres_url).values()) == {0}


def test_delta_table_with_other_columns_is_refused_by_name(tmp_path: Path) -> None:
    delta_path = str(tmp_path / "payments")
    coordinator = TwoPhaseCommitCoordinator(
        log=str(tmp_path / "decisions"), participants=[DeltaParticipant(delta_path)], app_id="d"
    )
    coordinator.apply(payments(3), 0)
    with pytest.raises(ValueError, match="'note'"):
        coordinator.apply(payments(3).append_column("note", pa.array(["x"] * 3)), 1)
    assert len(delta_keys(delta_path)) == 3


def test_retried_partition_rolls_back_only_its_earlier_attempts(postgres_url: str) -> None:
    """What a retried Spark task does before preparing its partition again."""
    create_accounts(postgres_url)
    participant = PostgresParticipant(postgres_url, INCREMENT)
    records = payments(6)
    txn = Transaction.new("retry", 0, ["topic", "partition", "offset"])
    participant.prepare(records.slice(0, 3), txn, part="p0a0")
    other = participant.prepare(records.slice(3, 3), txn, part="p1a0")

    assert participant.rollback_parts(txn.txid, "p0a") == 1
    # The retry would wait forever on the ledger keys of a prepared earlier attempt.
    retried = participant.prepare(records.slice(0, 3), txn, part="p0a1")
    assert sorted(t.part for t in participant.recover(txn.txid)) == ["p0a1", "p1a0"]
    for token in (retried, other):
        participant.commit(token)

    assert balances(postgres_url) == expected_balances(records)
    assert prepared_gids(postgres_url) == []


def _rolled_back_by_hand(url: str, gid: str) -> None:
    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.exec_driver_sql(f"ROLLBACK PREPARED '{gid}'")
    engine.dispose()


def test_commit_of_a_transaction_rolled_back_after_the_decision_is_an_error(
    postgres_url: str,
) -> None:
    """Postgres tells a repeated commit (fine) from a rollback by someone else (an error)."""
    create_accounts(postgres_url)
    participant = PostgresParticipant(postgres_url, INCREMENT)
    records = payments(6)
    committed = participant.prepare(records.slice(0, 3), Transaction.new("hand", 0, KEYS))
    participant.commit(committed)
    participant.commit(committed)
    rolled_back = participant.prepare(records.slice(3, 3), Transaction.new("hand", 1, KEYS))
    _rolled_back_by_hand(postgres_url, str(rolled_back.data["gid"]))

    with pytest.raises(TwoPhaseCommitError, match=r"rolled back.*ROLLBACK PREPARED by hand"):
        participant.commit(rolled_back)
    assert balances(postgres_url) == expected_balances(records.slice(0, 3))


def test_a_ledger_with_a_transaction_column_keeps_it_filled(postgres_url: str) -> None:
    """Ledgers of earlier releases name each key's transaction, and their decisions' tokens
    carry no transaction id: the ledger tells a commit from a rollback for them."""
    create_accounts(postgres_url)
    engine = create_engine(postgres_url)
    with engine.begin() as conn:
        conn.execute(text(
            'CREATE TABLE kse_ledger_postgres (topic text NOT NULL, partition int NOT NULL,'
            ' "offset" bigint NOT NULL, txid text NOT NULL, applied_at timestamptz NOT NULL'
            ' DEFAULT now(), PRIMARY KEY (topic, partition, "offset"))'
        ))
    participant = PostgresParticipant(postgres_url, INCREMENT)
    records = payments(12)
    first, second = Transaction.new("old", 0, KEYS), Transaction.new("old", 1, KEYS)
    participant.commit(participant.prepare(records.slice(0, 6), first))
    # Keys 3-5 are known: the claim takes the ON CONFLICT path, which must fill txid too.
    applied = participant.prepare(records.slice(3, 6), second)
    participant.commit(applied)
    rolled_back = participant.prepare(records.slice(9, 3), Transaction.new("old", 2, KEYS))
    _rolled_back_by_hand(postgres_url, str(rolled_back.data["gid"]))

    def without_xid(token: Token) -> Token:
        return Token(token.participant, token.txid, token.rows_written, {"gid": token.data["gid"]})

    participant.commit(without_xid(applied))
    with pytest.raises(TwoPhaseCommitError, match="rolled back"):
        participant.commit(without_xid(rolled_back))
    with engine.connect() as conn:
        txids = conn.execute(
            text("SELECT txid, count(*) FROM kse_ledger_postgres GROUP BY txid")
        ).all()
    engine.dispose()
    assert sorted(txids) == sorted([(first.txid, 6), (second.txid, 3)])
    assert balances(postgres_url) == expected_balances(records.slice(0, 9))
