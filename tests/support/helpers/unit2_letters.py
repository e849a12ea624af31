"""Dead letters of source-shaped rows, made by the toolkit's own ``letters``, for the tests of
each dead-letter sink."""

from __future__ import annotations

import pyarrow as pa

from helpers.batches import source_rows
from kafka_share_eos.deadletter import Rejection, letters


def rejected(
    count: int, *, first_offset: int = 0, stage: str = "write", batch_id: int = 0
) -> pa.Table:
    """The letters of ``count`` records of topic ``orders``, partition 0, from ``first_offset``
    on, each refused at ``stage`` with an error naming its offset."""
    offsets = range(first_offset, first_offset + count)
    rows = source_rows(
        key=[b"k%d" % o for o in offsets], value=[b'{"order": %d}' % o for o in offsets],
        topic="orders", partition=0, offset=offsets, deliveryCount=2,
    )
    refusals = [Rejection(i, stage, ValueError(f"refused offset {o}"))
                for i, o in enumerate(offsets)]
    return letters(rows, refusals, strategy="test", batch_id=batch_id)


def uncoordinated(amounts: list[int]) -> pa.Table:
    """The letters of rows a transform left without Kafka coordinates: identified by content."""
    rows = pa.table({"amount": pa.array(amounts, pa.int64())})
    return letters(rows, [Rejection(i, "transform", KeyError("order_id"))
                          for i in range(len(amounts))], strategy="test", batch_id=0)


def by_id(table: pa.Table) -> list[dict[str, object]]:
    """The letters of ``table`` as dicts, in ``letter_id`` order."""
    return sorted(table.to_pylist(), key=lambda letter: str(letter["letter_id"]))
