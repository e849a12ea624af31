"""A batch's keys as a few ranges, per partition, or none when the keys are scattered."""

from __future__ import annotations

import pyarrow as pa
import pytest
from helpers.batches import events

from kafka_share_eos.sinks.key_ranges import MAX_RANGES, KeyRange, key_ranges, range_column

pytestmark = pytest.mark.timeout(120)


def test_key_ranges_cover_runs_per_partition_and_refuse_scattered_keys() -> None:
    keys = events([(0, 5), (1, 7), (0, 3), (0, 4), (1, 6), (0, 2000)]).select(
        ["topic", "partition", "offset"]
    )
    assert range_column(keys.schema) == "offset"
    assert key_ranges(keys, "offset") == [
        KeyRange(("t", 0), 3, 5),
        KeyRange(("t", 0), 2000, 2000),
        KeyRange(("t", 1), 6, 7),
    ]
    # Ten keys a thousand apart: ranges would span far more values than there are keys.
    scattered = pa.table({"id": pa.array(range(0, 10_000, 999), pa.int64())})
    assert key_ranges(scattered, "id", max_gap=1000) is None
    # One range per key beyond the limit.
    many = pa.table({"id": pa.array(range(0, 2000 * (MAX_RANGES + 1), 2000), pa.int64())})
    assert key_ranges(many, "id") is None
    assert range_column(pa.schema([("id", pa.int64()), ("name", pa.string())])) is None
