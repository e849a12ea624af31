"""One batch's way through the transform and the dead letters: a record at the delivery limit
whose applied-or-not lookup fails is dead-lettered as before, unless the connection was lost."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
import sqlalchemy as sa
from helpers.delivery_limit import LIMIT, deliveries

from kafka_share_eos.deadletter import SqlDeadLetters
from kafka_share_eos.deadletter.screening import Screening
from kafka_share_eos.strategies import DeadLetterPolicy

pytestmark = pytest.mark.timeout(120)


def screening_whose_lookup_raises(
    tmp_path: Path, error: Exception
) -> tuple[Screening, SqlDeadLetters]:
    """Offset 0 below the limit, offset 1 at it, and a lookup that raises ``error``."""
    dead = SqlDeadLetters(f"sqlite:///{tmp_path / 'letters.db'}", "orders_dead")

    def lookup(rows: pa.Table) -> list[bool] | None:
        raise error

    policy = DeadLetterPolicy(dead, max_delivery_count=LIMIT)
    return Screening(deliveries([0, 1], [1, LIMIT]), 0, "s", policy, None, lookup), dead


def test_a_lookup_that_fails_dead_letters_the_record_as_before(tmp_path: Path) -> None:
    batch, dead = screening_whose_lookup_raises(
        tmp_path, pa.ArrowInvalid("a reader feature delta-rs lacks")
    )
    assert batch.transformed()["offset"].to_pylist() == [0]
    batch.send_letters()
    assert dead.read()["offset"].to_pylist() == [1]


def test_a_lost_connection_during_the_lookup_fails_the_batch(tmp_path: Path) -> None:
    lost = sa.exc.OperationalError("SELECT", {}, ConnectionError("server closed the connection"))
    batch, dead = screening_whose_lookup_raises(tmp_path, lost)
    with pytest.raises(sa.exc.OperationalError):
        batch.transformed()
    assert dead.count() == 0
