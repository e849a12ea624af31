"""Rows in the journal's schema, as the source journals what it polled."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa

from helpers.batches import source_record_batch


def journaled(partition: int, offsets: range, delivery: int = 1,
              topic: str = "orders") -> pa.RecordBatch:
    """Records ``offsets`` of ``topic``'s ``partition``, each delivered ``delivery`` times."""
    n = len(offsets)
    return source_record_batch(
        key=[b"k"] * n, value=[b"v"] * n, topic=topic, partition=[partition] * n,
        offset=list(offsets), timestamp=[dt.datetime(2026, 1, 1, tzinfo=dt.UTC)] * n,
        timestampType=[0] * n, headers=[[] for _ in range(n)], deliveryCount=[delivery] * n)
