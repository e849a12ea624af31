"""Source-shaped rows of topic ``orders`` with the delivery counts the tests pick, and the
delivery limit they are checked against."""

from __future__ import annotations

import json

import pyarrow as pa

from helpers.batches import source_rows

LIMIT = 3


def deliveries(offsets: list[int], counts: list[int]) -> pa.Table:
    """Source-shaped rows of topic ``orders``, partition 0; offset i holds order i."""
    return source_rows(
        value=[json.dumps({"order_id": o}).encode() for o in offsets],
        topic="orders", partition=0, offset=offsets, deliveryCount=counts,
    )
