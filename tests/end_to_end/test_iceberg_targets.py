"""The checkpoint-dedup store into an Iceberg append sink, and two-phase commit with an Iceberg
participant, as Spark runs them: the kafka-share source on the embedded broker through
``foreachBatch``, across a run that fails after the sink committed a batch (the dedup store) or
between the commit decision and the commit (two-phase), then a restarted run."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from helpers import produce
from helpers.iceberg import batches_committed, catalog_config, offsets
from helpers.streaming import run_available_now, share_stream

from kafka_share_eos import (
    CheckpointDedupStore,
    IcebergAppendSink,
    IcebergParticipant,
    TwoPhaseCommitCoordinator,
)
from kafka_share_eos.proving_ground.console import CrashOnce
from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic
from kafka_share_eos.strategies.base import BatchStrategy
from kafka_share_eos.twophase import Token

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]

RECORDS = 40


def written(share_topic: ShareTopic) -> list[tuple[int, int]]:
    """Produce the records; their (partition, offset), sorted."""
    return sorted(produce(share_topic.bootstrap_servers, share_topic.topic,
                          [b"v%d" % i for i in range(RECORDS)],
                          partitions=share_topic.partitions))


def run_until_done(spark: SparkSession, share_topic: ShareTopic, tmp_path: Path,
                   build: Callable[[], BatchStrategy], done: Callable[[], bool]) -> BatchStrategy:
    """Restart the query with a new strategy, at least once (Spark replays the failed batch)
    and until ``done()``; the strategy of the last run."""
    strategy = build()
    while True:
        before = strategy.totals.batches
        stream = share_stream(spark, share_topic, tmp_path / "journal",
                              **{"kafka.max.poll.records": "20"})
        run_available_now(stream, tmp_path / "checkpoint", strategy)  # type: ignore[arg-type]
        assert strategy.totals.batches > before, "a restart made no progress"
        if done():
            return strategy


def first_run(spark: SparkSession, share_topic: ShareTopic, tmp_path: Path,
              pipeline: Any, failure: str) -> None:
    stream = share_stream(spark, share_topic, tmp_path / "journal",
                          **{"kafka.max.poll.records": "20"})
    with pytest.raises(Exception, match=failure):
        run_available_now(stream, tmp_path / "checkpoint", pipeline)


def test_the_dedup_store_appends_a_share_stream_to_iceberg_once_across_a_failed_run(
    spark: SparkSession, share_topic: ShareTopic, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    expected = written(share_topic)
    config = catalog_config(request, tmp_path, "sqlite")

    def store() -> CheckpointDedupStore:
        sink = IcebergAppendSink("db.events", catalog=config, create_table=True)
        return CheckpointDedupStore(str(tmp_path / "ledger"), sink)

    first_run(spark, share_topic, tmp_path,
              CrashOnce(store(), 1, lambda b: RuntimeError(f"driver lost after batch {b}")),
              "driver lost after batch 1")
    restarted = run_until_done(spark, share_topic, tmp_path, store,
                               lambda: len(set(offsets(config))) == len(expected))

    assert offsets(config) == expected
    replay = restarted.reports[0]
    assert replay.batch_id == 1, "Spark did not replay the failed batch"
    assert (replay.rows_written, replay.write_path) == (0, "sink-skipped-batch")
    committed = [b for b in batches_committed(config) if b is not None]
    assert len(committed) == len(set(committed))  # no batch appended twice


class CommitLostOnce(IcebergParticipant):
    """An Iceberg participant whose process is lost once, after the decision and before its
    commit of batch 1."""

    lost = False

    def commit(self, token: Token) -> int:
        if not CommitLostOnce.lost and ":1:" in token.txid:
            CommitLostOnce.lost = True
            raise RuntimeError("driver lost between the decision and the commit")
        return super().commit(token)


def test_two_phase_commit_lands_a_share_stream_in_iceberg_once_after_a_crash_between_phases(
    spark: SparkSession, share_topic: ShareTopic, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    expected = written(share_topic)
    config = catalog_config(request, tmp_path, "sqlite")

    def coordinator(kind: type[IcebergParticipant] = IcebergParticipant
                    ) -> TwoPhaseCommitCoordinator:
        return TwoPhaseCommitCoordinator(
            str(tmp_path / "decisions"),
            [kind("db.payments", catalog=config)],
            app_id="payments",
        )

    first_run(spark, share_topic, tmp_path, coordinator(CommitLostOnce),
              "between the decision and the commit")
    staged = len(list((tmp_path / "warehouse").rglob("_kse_2pc/*.json")))
    restarted = run_until_done(spark, share_topic, tmp_path, coordinator,
                               lambda: len(set(offsets(config, "db.payments"))) == len(expected))

    assert staged == 1  # batch 1's files, decided and not committed
    assert offsets(config, "db.payments") == expected
    replay = restarted.reports[0]
    assert replay.batch_id == 1, "Spark did not replay the failed batch"
    # The restarted coordinator committed batch 1 on start; its replay finds the rows there.
    assert replay.rows_written == 0 and replay.already_applied > 0
    assert list((tmp_path / "warehouse").rglob("_kse_2pc/*.json")) == []
