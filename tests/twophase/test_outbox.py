"""The outbox participant: one message per new event in the outbox table, committed with the other
effects of the batch, and decisions kept in Postgres, also by a pickled copy."""

from __future__ import annotations

import pyarrow as pa
import pytest
from helpers.accounts import INCREMENT, balances, create_accounts
from helpers.pickled import copied
from sqlalchemy import create_engine, text

from kafka_share_eos.strategies.two_phase_commit import TwoPhaseCommitCoordinator
from kafka_share_eos.twophase.outbox import OutboxParticipant
from kafka_share_eos.twophase.postgres import PostgresParticipant
from kafka_share_eos.twophase.postgres_log import PostgresDecisionLog

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(120)]


def test_business_key_outbox_and_postgres_decision_log(postgres_url: str) -> None:
    """Dedup on a business key; one outbox message per event, decisions kept in Postgres."""
    create_accounts(postgres_url)
    events = pa.table(
        {
            "event_id": ["e1", "e2", "e3", "e2", "e4"],
            "account": pa.array([1, 2, 1, 2, 3], pa.int32()),
            "amount": pa.array([10, 20, 30, 20, 40], pa.int64()),
        }
    )
    coordinator = TwoPhaseCommitCoordinator(
        log=PostgresDecisionLog(postgres_url),
        participants=[
            PostgresParticipant(postgres_url, INCREMENT, name="balances"),
            OutboxParticipant(postgres_url, ["event_id", "account", "amount"]),
        ],
        app_id="events",
        key_columns=["event_id"],
    )
    coordinator.apply(events.slice(0, 3), 0)
    coordinator.apply(events, 1)

    assert balances(postgres_url) == {0: 0, 1: 40, 2: 20, 3: 40, 4: 0, 5: 0, 6: 0}
    engine = create_engine(postgres_url)
    with engine.connect() as conn:
        sent = conn.execute(text("SELECT payload->>'event_id' FROM kse_outbox")).scalars()
        assert sorted(sent) == ["e1", "e2", "e3", "e4"]
        assert conn.execute(text("SELECT count(*) FROM kse_2pc_decisions")).scalar_one() == 0
    engine.dispose()


def test_a_pickled_copy_sends_each_event_once_too(postgres_url: str) -> None:
    """The outbox and the Postgres decision log go on in a copy (a Spark Connect server's),
    which connects by itself."""
    events = pa.table({"event_id": ["e1", "e2", "e3", "e4"]})
    coordinator = TwoPhaseCommitCoordinator(
        log=PostgresDecisionLog(postgres_url),
        participants=[OutboxParticipant(postgres_url, ["event_id"])],
        app_id="events", key_columns=["event_id"],
    )
    coordinator.apply(events.slice(0, 2), 0)

    copied(coordinator).apply(events.slice(1, 3), 1)

    engine = create_engine(postgres_url)
    with engine.connect() as conn:
        sent = conn.execute(text("SELECT payload->>'event_id' FROM kse_outbox")).scalars()
        assert sorted(sent) == ["e1", "e2", "e3", "e4"]
    engine.dispose()
