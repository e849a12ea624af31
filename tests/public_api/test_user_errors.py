"""What a user can get wrong surfaces in the toolkit's error family (or as a TypeError or
ValueError with a message), at construction where it can: never as a raw SQLAlchemy or delta-rs
error, and never as a refusal of every row."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import sqlalchemy as sa
from helpers.batches import source_rows

from kafka_share_eos import (
    CheckpointDedupStore,
    ConfigurationError,
    DeadLetterPolicy,
    DeltaAppendSink,
    DeltaDeadLetters,
    DeltaParticipant,
    IdempotentUpsertSink,
    MissingExtraError,
    PostgresDecisionLog,
    PostgresParticipant,
    SqlDeadLetters,
    TransformShapeError,
)

ROWS = source_rows(topic="t", partition=0, offset=[0, 1])
NOT_A_URL = "app:secret at db/orders"


@pytest.mark.parametrize("build", [
    lambda: IdempotentUpsertSink.sql(NOT_A_URL, "orders"),
    lambda: SqlDeadLetters(NOT_A_URL, "letters"),
    lambda: PostgresParticipant(NOT_A_URL, "accounts"),
    lambda: PostgresDecisionLog(NOT_A_URL),
], ids=["upsert", "dead-letters", "participant", "decision-log"])
def test_a_string_that_is_no_sql_url_is_refused_without_echoing_it(
    build: Callable[[], object],
) -> None:
    with pytest.raises(ConfigurationError, match="is not a SQLAlchemy URL") as refused:
        build()
    assert "secret" not in str(refused.value)


def test_a_url_whose_driver_is_missing_names_the_driver_and_the_extra() -> None:
    url = "postgresql+asyncpg://app@127.0.0.1:9/orders"
    # Building the sink checks its database, which needs the driver.
    with pytest.raises(MissingExtraError, match="asyncpg is not installed") as missing:
        IdempotentUpsertSink.sql(url, "orders")
    assert missing.value.extra == "postgres" and "postgresql+psycopg://" in str(missing.value)
    sink = IdempotentUpsertSink.sql(url, "orders", check_on_create=False)
    with pytest.raises(MissingExtraError, match="asyncpg is not installed"):
        sink.apply(ROWS, 0)


@pytest.mark.parametrize("build", [
    lambda uri: IdempotentUpsertSink.delta(uri),
    lambda uri: DeltaAppendSink(uri),
    lambda uri: CheckpointDedupStore(uri, print),
    lambda uri: DeltaDeadLetters(uri),
    lambda uri: DeltaParticipant(uri),
    lambda uri: IdempotentUpsertSink.sql("sqlite://", "t", dead_letters=uri),
], ids=["upsert", "append", "ledger", "dead-letters", "participant", "dead-letter-uri"])
def test_a_delta_uri_delta_rs_has_no_store_for_is_refused_at_construction(
    build: Callable[[str], object],
) -> None:
    with pytest.raises(ConfigurationError, match="delta-rs has no store for scheme 'gopher'"):
        build("gopher://bucket/table")


def test_a_dead_letter_policy_takes_a_sink_not_a_string() -> None:
    with pytest.raises(TypeError, match=r"open_dead_letters\('letters.db'\)"):
        DeadLetterPolicy("letters.db")  # type: ignore[arg-type]


def test_a_transform_returning_no_table_fails_the_batch_instead_of_dead_lettering_it(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'target.db'}"
    sink = IdempotentUpsertSink.sql(
        url, "orders", create_table=True, transform=lambda rows: None,
        dead_letters=SqlDeadLetters(url, "letters"),
    )
    with pytest.raises(TransformShapeError, match="not NoneType"):
        sink.apply(ROWS, 0)
    with sa.create_engine(url).connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM letters")).scalar_one() == 0
