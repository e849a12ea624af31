"""The checkpoint-dedup store with its identity ledger in Iceberg, as Spark runs it: the
kafka-share source on the embedded broker through ``foreachBatch`` into an Iceberg append sink,
across a run that fails after the sink committed a batch and, under ``full``, one that fails
after the ledger claimed a batch and before the sink wrote it; every record lands once, and is
claimed once."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest
from helpers import produce
from helpers.iceberg import batches_committed, catalog_config, offsets
from helpers.streaming import restart_until, run_available_now, share_stream

from kafka_share_eos import CheckpointDedupStore, IcebergAppendSink, IcebergLedger
from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]

RECORDS = 40


class LosesConnections(IcebergAppendSink):
    """An append sink whose connection is lost at each of ``losses`` in turn, from batch 1 on:
    ``"before"`` it writes a batch (the ledger has claimed its records, the table holds none
    of them) or ``"after"`` it committed one (both hold them)."""

    def __init__(self, *args: Any, losses: Sequence[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pending = list(losses)
        self.lost: dict[str, int] = {}

    def __call__(self, rows: pa.Table, batch_id: int) -> bool:
        if self.pending[:1] == ["before"] and batch_id >= 1:
            self._lose(batch_id)
        applied = super().__call__(rows, batch_id)
        if self.pending[:1] == ["after"] and batch_id > max(self.lost.values(), default=0):
            self._lose(batch_id)
        return applied

    def _lose(self, batch_id: int) -> None:
        point = self.pending.pop(0)
        self.lost[point] = batch_id
        raise ConnectionError(f"sink connection lost {point} batch {batch_id}")


@pytest.mark.parametrize("losses", [["after"], pytest.param(["before", "after"],
                                                            marks=pytest.mark.full)])
def test_a_share_stream_lands_once_through_an_iceberg_ledger_across_failed_runs(
    spark: SparkSession, share_topic: ShareTopic, request: pytest.FixtureRequest, tmp_path: Path,
    losses: list[str],
) -> None:
    expected = sorted(produce(share_topic.bootstrap_servers, share_topic.topic,
                              [b"v%d" % i for i in range(RECORDS)],
                              partitions=share_topic.partitions))
    config = catalog_config(request, tmp_path, "sqlite")
    sink = LosesConnections("db.events", catalog=config, create_table=True, losses=losses)
    store = CheckpointDedupStore(IcebergLedger("db.ledger", catalog=config), sink)

    def run(pipeline: CheckpointDedupStore) -> None:
        stream = share_stream(spark, share_topic, tmp_path / "journal",
                              **{"kafka.max.poll.records": "10"})
        try:
            run_available_now(stream, tmp_path / "checkpoint", pipeline)  # type: ignore[arg-type]
        except Exception as error:
            assert "sink connection lost" in str(error), error
            if list(sink.lost)[-1] == "before":  # claimed, not written
                claimed, written = set(offsets(config, "db.ledger")), set(offsets(config))
                assert claimed > written, "the ledger claimed no record the sink lacks"

    restart_until(run, store, lambda: not sink.pending and len(
        set(offsets(config))) == len(expected))

    assert list(sink.lost) == losses
    assert offsets(config) == expected
    assert offsets(config, "db.ledger") == expected
    replays = {r.batch_id: r for r in store.reports if r.batch_id in sink.lost.values()}
    if "before" in sink.lost:
        assert replays[sink.lost["before"]].rows_written > 0  # its own claims, written now
    assert replays[sink.lost["after"]].write_path == "sink-skipped-batch"
    committed = [b for b in batches_committed(config) if b is not None]
    assert len(committed) == len(set(committed))  # no batch appended twice
