"""``consumers=N``: share consumers in executor tasks, one journal slot each, end to end."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import sqlalchemy as sa
from helpers import accounts, produce
from helpers.accounts import produce_payments
from helpers.streaming import run_available_now, share_stream

from kafka_share_eos.journal import Journal
from kafka_share_eos.pipeline_status import journal_status
from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic
from kafka_share_eos.strategies import IdempotentUpsertSink, TwoPhaseCommitCoordinator
from kafka_share_eos.twophase.postgres import PostgresParticipant

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]


class TwoActions:
    """A foreachBatch target that reads each batch twice, as strategies that count first do:
    both actions must see the same records."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self.partitions: list[int] = []

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        counted = batch.count()
        rows = [row.asDict() for row in batch.collect()]
        assert counted == len(rows), f"batch {batch_id}: {counted} counted, {len(rows)} read"
        self.partitions.append(batch.rdd.getNumPartitions())
        self.rows.extend(rows)


@pytest.mark.partitions(6)
def test_three_consumers_split_the_group_and_every_record_arrives_once(
    spark: SparkSession, private_share_topic: ShareTopic, tmp_path: Path
) -> None:
    topic = private_share_topic
    produced = produce(topic.bootstrap_servers, topic.topic,
                       (b"v%d" % i for i in range(600)), partitions=topic.partitions)
    sink = TwoActions()
    df = share_stream(spark, topic, tmp_path / "journal", consumers="3",
                      maxRecordsPerTrigger="150", availableNowIdleMs="3000")
    run_available_now(df, tmp_path / "checkpoint", sink)

    seen = Counter((row["partition"], row["offset"]) for row in sink.rows)
    assert set(seen) == set(produced)
    assert all(n == 3 for n in sink.partitions)
    status = journal_status(str(tmp_path / "journal")).to_dict()
    # A record comes twice only when its ACCEPT was refused: the embedded broker drops every
    # share session when any client disconnects, and the strategies absorb such redeliveries.
    assert sum(n - 1 for n in seen.values()) <= status["totals"]["ack_failures"]
    slots = {entry["slot"]: entry["records"] for entry in status["consumers"]}
    assert sum(slots.values()) == len(sink.rows)
    assert sum(1 for n in slots.values() if n) > 1, slots
    # A share of 150 over three slots: no slot journaled more than 50 records in one batch.
    assert all(
        entry["records"] <= 50 for batch in status_batches(tmp_path) for entry in batch
    )
    assert Journal(str(tmp_path / "journal")).sequences() == []


def status_batches(tmp_path: Path) -> list[list[dict[str, int]]]:
    return [m.consumers for m in journal_status(str(tmp_path / "journal")).batches]


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        ({"consumers": "3", "acknowledge": "afterCommit"}, "'consumers' .* 'acknowledge'"),
        ({"consumers": "0"}, "consumers"),
    ],
)
def test_consumer_options_are_checked_at_load(
    spark: SparkSession, private_share_topic: ShareTopic, tmp_path: Path,
    extra: dict[str, str], named: str,
) -> None:
    with pytest.raises(Exception, match=named):
        share_stream(spark, private_share_topic, tmp_path / "journal", **extra)


class BothOnExecutors:
    """Two strategies over each batch, both writing from the executors; fails once after
    ``fail_after`` was applied, before Spark records it."""

    def __init__(self, upsert: IdempotentUpsertSink, two_phase: TwoPhaseCommitCoordinator,
                 fail_after: int | None) -> None:
        self.upsert, self.two_phase, self.fail_after = upsert, two_phase, fail_after
        self.write_paths: set[str] = set()

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        self.write_paths.add(self.upsert(batch, batch_id).write_path)
        self.two_phase(batch, batch_id)
        if batch_id == self.fail_after:
            self.fail_after = None
            raise RuntimeError(f"driver lost after batch {batch_id}")


@pytest.mark.postgres
@pytest.mark.partitions(6)
def test_executor_consumers_and_executor_writes_apply_each_payment_once(
    spark: SparkSession, private_share_topic: ShareTopic, postgres_url: str, tmp_path: Path
) -> None:
    topic = private_share_topic
    accounts.create_accounts(postgres_url)
    sent = produce_payments(topic, 240)

    def run(fail_after: int | None) -> BothOnExecutors:
        target = BothOnExecutors(
            IdempotentUpsertSink.sql(postgres_url, "payment_rows", create_table=True,
                                     write_path="executors"),
            TwoPhaseCommitCoordinator(
                log=str(tmp_path / "decisions"),
                participants=[PostgresParticipant(postgres_url, accounts.INCREMENT)],
                app_id="slots", prepare_on="executors",
            ),
            fail_after,
        )
        stream = share_stream(spark, topic, tmp_path / "journal", consumers="3",
                              maxRecordsPerTrigger="60", availableNowIdleMs="3000")
        run_available_now(payments(stream), tmp_path / "checkpoint", target)
        return target

    with pytest.raises(Exception, match="driver lost after batch 1"):
        run(fail_after=1)
    restarted = run(fail_after=None)

    assert restarted.write_paths == {"executors"}
    assert accounts.balances(postgres_url) == accounts.expected_balances(sent)
    assert accounts.prepared_gids(postgres_url) == []
    engine = sa.create_engine(postgres_url)
    with engine.connect() as conn:
        rows = conn.execute(sa.text('SELECT "partition", "offset" FROM payment_rows')).all()
    engine.dispose()
    expected = zip(sent["partition"].to_pylist(), sent["offset"].to_pylist(), strict=True)
    assert sorted(tuple(r) for r in rows) == sorted(expected)
    slots = journal_status(str(tmp_path / "journal")).consumers
    assert sum(1 for slot in slots if slot["records"]) > 1, slots


def payments(stream: DataFrame) -> DataFrame:
    return stream.selectExpr(
        "topic", "partition", "offset",
        "CAST(split(CAST(value AS STRING), ':')[0] AS INT) AS account",
        "CAST(split(CAST(value AS STRING), ':')[1] AS BIGINT) AS amount",
    )
