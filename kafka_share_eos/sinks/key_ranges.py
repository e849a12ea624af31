"""A batch's keys as a few ranges, so a target can be asked which of them it holds in one read.

Kafka record identities ``(topic, partition, offset)`` come in runs: a batch holds consecutive
offsets of a few partitions, plus some redeliveries from further back. Covering each run with one
``BETWEEN`` on the last key column, for each value of the other key columns, lets the target's
unique index (whose last column is that one) answer with a handful of range scans that return
only the keys it holds, and nothing at all for a batch of new records.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

RANGE_GAP = 1000
"""Values further apart than this start a new range."""

MAX_RANGES = 256
"""More ranges than this make the query itself the cost: the batch is not range-shaped."""

MAX_SPAN_PER_ROW = 8
"""A unique key holds at most one stored row per value in a range, so ranges spanning at most
this many values per batch row bound what the read returns to that many rows per batch row."""


@dataclass(frozen=True)
class KeyRange:
    """Keys whose other key columns equal ``fixed`` and whose range column is in ``[low, high]``."""

    fixed: tuple[Any, ...]
    low: int
    high: int


def range_column(keys: pa.Schema) -> str | None:
    """The last key column when it is an integer (the offset of the record identity), else None."""
    last = keys.field(len(keys) - 1)
    return last.name if pa.types.is_integer(last.type) else None


def key_ranges(keys: pa.Table, column: str, max_gap: int = RANGE_GAP) -> list[KeyRange] | None:
    """Ranges of ``column`` per value of the other columns of ``keys`` covering every row.

    Returns None when the keys are not range-shaped: more than :data:`MAX_RANGES` ranges, or
    ranges spanning more than :data:`MAX_SPAN_PER_ROW` values per row. ``keys`` must be unique
    and free of nulls (a deduplicated batch).
    """
    n = keys.num_rows
    if n == 0:
        return []
    fixed = [name for name in keys.column_names if name != column]
    order = [(name, "ascending") for name in (*fixed, column)]
    ordered = keys.take(pc.sort_indices(keys, order))
    values = pc.cast(ordered.column(column), pa.int64()).combine_chunks()
    later, earlier = slice(1, n), slice(0, n - 1)
    breaks = pc.greater(pc.subtract(values[later], values[earlier]), max_gap)
    columns = {name: ordered.column(name).combine_chunks() for name in fixed}
    for name in fixed:
        breaks = pc.or_(breaks, pc.not_equal(columns[name][later], columns[name][earlier]))
    starts = [0, *(i + 1 for i in pc.indices_nonzero(breaks).to_pylist())]
    if len(starts) > MAX_RANGES:
        return None
    ends = [*(start - 1 for start in starts[1:]), n - 1]
    lows, highs = values.take(starts).to_pylist(), values.take(ends).to_pylist()
    if sum(high - low + 1 for low, high in zip(lows, highs, strict=True)) > MAX_SPAN_PER_ROW * n:
        return None
    fixed_values = [columns[name].take(starts).to_pylist() for name in fixed]
    return [
        KeyRange(tuple(values_of[i] for values_of in fixed_values), lows[i], highs[i])
        for i in range(len(starts))
    ]
