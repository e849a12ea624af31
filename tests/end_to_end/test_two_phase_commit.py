"""The two-phase-commit coordinator as a real ``foreachBatch`` sink of the kafka-share source.

Payments flow from the embedded broker through local Spark into account balances (Postgres) and a
payment log (Delta). The first query run fails right after committing a batch, before Spark can
record it, so the restarted query replays that batch and the broker redelivers what the dead
run still held; balances and the Delta log must still count every payment exactly once.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest
from helpers import accounts
from helpers.pauses import Background
from helpers.streaming import run_available_now, share_stream

from kafka_share_eos.proving_ground.console import CrashOnce
from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic
from kafka_share_eos.strategies.two_phase_commit import TwoPhaseCommitCoordinator
from kafka_share_eos.twophase.delta import DeltaParticipant
from kafka_share_eos.twophase.postgres import PostgresParticipant

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = [
    pytest.mark.spark, pytest.mark.older_pyspark, pytest.mark.postgres, pytest.mark.timeout(300)
]


def driver_lost(batch_id: int) -> RuntimeError:
    """The failure of a driver lost right after batch ``batch_id`` committed its effects."""
    return RuntimeError(f"driver lost after committing batch {batch_id}")


def payments_stream(spark: SparkSession, topic: ShareTopic, journal: Path) -> DataFrame:
    return share_stream(spark, topic, journal, **{"kafka.max.poll.records": "40"}).selectExpr(
        "topic", "partition", "offset",
        "CAST(split(CAST(value AS STRING), ':')[0] AS INT) AS account",
        "CAST(split(CAST(value AS STRING), ':')[1] AS BIGINT) AS amount",
    )


@pytest.mark.older_pyspark(full=True)
def test_spark_stream_applies_each_payment_once_across_a_failed_run(
    spark: SparkSession, share_topic: ShareTopic, postgres_url: str, tmp_path: Path
) -> None:
    accounts.create_accounts(postgres_url)
    sent = accounts.produce_payments(share_topic, 150)
    delta_path = str(tmp_path / "payments")

    def run(fail_after: int | None) -> TwoPhaseCommitCoordinator:
        coordinator = TwoPhaseCommitCoordinator(
            log=str(tmp_path / "checkpoint-2pc"),
            participants=[PostgresParticipant(postgres_url, accounts.INCREMENT),
                          DeltaParticipant(delta_path)],
            app_id="payments",
        )
        run_available_now(
            payments_stream(spark, share_topic, tmp_path / "journal"),
            tmp_path / "checkpoint",
            CrashOnce(coordinator, fail_after, driver_lost),
        )
        return coordinator

    with pytest.raises(Exception, match="driver lost after committing batch 1"):
        run(fail_after=1)
    restarted = run(fail_after=None)

    assert accounts.balances(postgres_url) == accounts.expected_balances(sent)
    assert accounts.delta_keys(delta_path) == sorted(
        zip(sent["partition"].to_pylist(), sent["offset"].to_pylist(), strict=True)
    )
    assert accounts.prepared_gids(postgres_url) == []
    # The replayed batch 1 was absorbed by the ledgers, not applied again.
    first = restarted.reports[0]
    assert first.batch_id == 1
    assert first.rows_written == 0
    assert first.already_applied == first.rows_in - first.duplicates_in_batch > 0


@pytest.mark.older_pyspark(full=True)
def test_two_queries_on_one_share_group_and_shared_targets_apply_each_payment_once(
    spark: SparkSession, share_topic: ShareTopic, postgres_url: str, tmp_path: Path
) -> None:
    """Two queries (own checkpoint, journal, decision log and app_id) drain one share group
    into the same balances and Delta table at the same time."""
    accounts.create_accounts(postgres_url)
    sent = accounts.produce_payments(share_topic, 150)
    delta_path = str(tmp_path / "payments")
    apps = {
        name: TwoPhaseCommitCoordinator(
            log=str(tmp_path / f"{name}-2pc"),
            participants=[PostgresParticipant(postgres_url, accounts.INCREMENT),
                          DeltaParticipant(delta_path)],
            app_id=name,
        )
        for name in ("a", "b")
    }
    runs = [
        Background(lambda name=name: run_available_now(
            payments_stream(spark, share_topic, tmp_path / f"{name}-journal"),
            tmp_path / f"{name}-checkpoint", apps[name],
        ))
        for name in apps
    ]
    for run in runs:
        run.outcome()

    assert accounts.balances(postgres_url) == accounts.expected_balances(sent)
    assert accounts.delta_keys(delta_path) == accounts.record_keys(sent)
    assert accounts.prepared_gids(postgres_url) == []


def preparing_on_executors(
    tmp_path: Path, postgres_url: str, effect: Any, app_id: str
) -> TwoPhaseCommitCoordinator:
    """A coordinator preparing ``effect`` on the executors, its decisions under ``tmp_path``."""
    return TwoPhaseCommitCoordinator(
        log=str(tmp_path / "decisions"),
        participants=[PostgresParticipant(postgres_url, effect)],
        app_id=app_id,
        prepare_on="executors",
    )


def test_prepare_on_executors_applies_each_payment_once(
    spark: SparkSession, postgres_url: str, tmp_path: Path
) -> None:
    """One prepared transaction per Spark partition; the driver logs and commits their gids."""
    accounts.create_accounts(postgres_url)
    records = accounts.payments(90)
    coordinator = preparing_on_executors(tmp_path, postgres_url, accounts.INCREMENT, "executors")
    first = spark.createDataFrame(records.slice(0, 60).to_pandas()).repartition(3)
    # Redeliveries of batch 0, in-batch duplicates, and new records, spread over partitions.
    second = spark.createDataFrame(
        pa.concat_tables([records.slice(50, 40), records.slice(80, 10)]).to_pandas()
    ).repartition(3)

    reports = [coordinator(first, 0), coordinator(second, 1), coordinator(second, 1)]

    assert accounts.balances(postgres_url) == accounts.expected_balances(records)
    assert [r.rows_written for r in reports] == [60, 30, 0]
    assert [r.duplicates_in_batch for r in reports] == [0, 10, 10]
    assert [r.already_applied for r in reports] == [0, 10, 40]
    assert coordinator.last_commit is not None
    assert accounts.prepared_gids(postgres_url) == []


def test_failed_executor_job_leaves_nothing_applied_nor_prepared(
    spark: SparkSession, postgres_url: str, tmp_path: Path
) -> None:
    """One partition's effect fails: the others' prepared work is rolled back, not committed."""

    def fail_on_first_record(conn: object, rows: pa.Table) -> None:
        # Defined here so that Spark pickles it by value for the executors.
        keys = zip(rows["partition"].to_pylist(), rows["offset"].to_pylist(), strict=True)
        if (0, 0) in set(keys):
            raise RuntimeError("cannot apply record 0/0")

    accounts.create_accounts(postgres_url)
    records = accounts.payments(60)
    batch = spark.createDataFrame(records.to_pandas())
    failing = preparing_on_executors(tmp_path, postgres_url, fail_on_first_record, "failing")
    with pytest.raises(Exception, match="cannot apply record 0/0"):
        failing(batch, 0)
    # A task still running when the job failed may prepare after the rollback: the next
    # batch's recovery pass resolves it before anything else.
    failing.recover()
    assert accounts.prepared_gids(postgres_url) == []
    assert set(accounts.balances(postgres_url).values()) == {0}

    # Nothing reached the ledger either: a working effect then applies every record.
    working = preparing_on_executors(tmp_path, postgres_url, accounts.INCREMENT, "failing")
    assert working(batch, 0).rows_written == records.num_rows
    assert accounts.balances(postgres_url) == accounts.expected_balances(records)


def test_partitions_whose_effects_touch_the_same_rows_fail_clearly_instead_of_waiting(
    spark: SparkSession, postgres_url: str, tmp_path: Path
) -> None:
    """Two partitions incrementing the same accounts: the one prepared first holds them until
    the batch is decided, so the other fails naming the cause, and nothing stays applied."""
    accounts.create_accounts(postgres_url)
    records = accounts.payments(60)
    coordinator = preparing_on_executors(tmp_path, postgres_url, accounts.INCREMENT, "shared-rows")
    # Without adaptive execution the key shuffle keeps its two partitions, as a batch large
    # enough to be cut does with it.
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    try:
        with pytest.raises(Exception, match="touch the same rows"):
            coordinator(spark.createDataFrame(records.to_pandas()), 0)
    finally:
        spark.conf.unset("spark.sql.adaptive.enabled")
    coordinator.recover()
    assert accounts.prepared_gids(postgres_url) == []
    assert set(accounts.balances(postgres_url).values()) == {0}


def test_executors_mode_refuses_driver_only_participants(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"\['delta'\]"):
        TwoPhaseCommitCoordinator(
            log=str(tmp_path / "decisions"),
            participants=[DeltaParticipant(str(tmp_path / "delta"))],
            app_id="refused",
            prepare_on="executors",
        )
