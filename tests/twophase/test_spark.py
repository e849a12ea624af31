"""Preparing the Postgres participant on the Spark executors: each key partition becomes its own
prepared transaction, the batch's counts come back to the driver, the effect stays invisible
until the driver commits the tokens, and a replayed batch prepares nothing."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pytest
from helpers.accounts import (
    INCREMENT,
    balances,
    create_accounts,
    expected_balances,
    payments,
    prepared_gids,
)

from kafka_share_eos.strategies.identity import RecordIdentity
from kafka_share_eos.twophase import Transaction
from kafka_share_eos.twophase.postgres import PostgresParticipant
from kafka_share_eos.twophase.spark import prepare_on_executors

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.postgres, pytest.mark.timeout(300)]

KEYS = ("topic", "partition", "offset")


def test_each_key_partition_is_prepared_on_an_executor_and_committed_by_the_driver(
    spark: SparkSession, postgres_url: str
) -> None:
    create_accounts(postgres_url)
    participant = PostgresParticipant(postgres_url, INCREMENT)
    identity = RecordIdentity(KEYS)
    records = payments(40)
    # Ten records delivered twice in the batch, in other partitions than their first delivery.
    df = spark.createDataFrame(pa.concat_tables([records, records.slice(0, 10)])).repartition(3)

    prepared = prepare_on_executors(df, participant, identity, Transaction.new("exec", 0, KEYS))

    assert (prepared.rows_in, prepared.duplicates_in_batch) == (50, 10)
    assert sum(token.rows_written for token in prepared.tokens) == 40
    parts = [token.part for token in prepared.tokens]
    assert len(set(parts)) == len(parts) and all(p.endswith("a0") for p in parts)
    assert sorted(prepared_gids(postgres_url)) == sorted(
        str(token.data["gid"]) for token in prepared.tokens)
    assert set(balances(postgres_url).values()) == {0}

    for token in prepared.tokens:
        participant.commit(token)
    assert balances(postgres_url) == expected_balances(records)
    assert prepared_gids(postgres_url) == []

    replay = prepare_on_executors(df, participant, identity, Transaction.new("exec", 0, KEYS))
    assert (replay.tokens, replay.rows_in, replay.duplicates_in_batch) == ((), 50, 10)
    assert prepared_gids(postgres_url) == []
    assert balances(postgres_url) == expected_balances(records)
