"""A batch id means one set of records: applied again with records the target or ledger did not
hold under it, the batch is refused, never skipped as a replay and counted as applied. A faithful
replay (the same records again) is still absorbed without writing anything twice."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from helpers.batches import source_rows
from helpers.delta import read_delta

from kafka_share_eos import (
    BatchIdReusedError,
    CheckpointDedupStore,
    DeltaAppendSink,
    IdempotentUpsertSink,
)


def records(offsets: range) -> pa.Table:
    return source_rows(topic="orders", partition=0, offset=offsets,
                       amount=pa.array([10 * o for o in offsets], pa.int64()))


def offsets(path: str) -> list[int]:
    return sorted(read_delta(path)["offset"].to_pylist())


def test_the_dedup_store_refuses_a_batch_id_again_with_other_records(tmp_path: Path) -> None:
    sink_path = str(tmp_path / "sink")
    store = CheckpointDedupStore(str(tmp_path / "ledger"), DeltaAppendSink(sink_path),
                                 app_id="app")
    store.apply(records(range(0, 5)), 7)
    assert store.apply(records(range(0, 5)), 7).rows_written == 0  # a replay: nothing again
    with pytest.raises(BatchIdReusedError, match="batch 7"):
        store.apply(records(range(5, 10)), 7)
    # Nothing of the refused batch counts as applied: under its own batch id it is written.
    assert store.apply(records(range(5, 10)), 8).rows_written == 5
    assert offsets(sink_path) == list(range(10))


def test_a_delta_upsert_refuses_a_batch_id_again_with_other_records(tmp_path: Path) -> None:
    path = str(tmp_path / "orders")
    sink = IdempotentUpsertSink.delta(path, app_id="app")
    sink.apply(records(range(0, 5)), 3)
    assert sink.apply(records(range(0, 5)), 3).rows_written == 0
    with pytest.raises(BatchIdReusedError, match="batch 3"):
        sink.apply(records(range(3, 8)), 3)
    assert sink.apply(records(range(3, 8)), 4).rows_written == 3
    assert offsets(path) == list(range(8))
