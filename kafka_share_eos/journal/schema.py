"""The rows the source journals and produces: Spark's Kafka source schema plus ``deliveryCount``.

The journal always keeps headers so a replay is faithful whatever ``includeHeaders`` says;
:func:`project` drops them on the way out when they were not asked for.
"""

from __future__ import annotations

import pyarrow as pa

HEADERS = "headers"
DELIVERY_COUNT = "deliveryCount"
DELIVERY_COUNT_LIMIT_KEY = "share.delivery.count.limit"
"""Metadata of the ``deliveryCount`` column: the share group's delivery limit, when the
brokers told it. Spark carries it to ``foreachBatch``'s DataFrame and into ``toArrow()``, so
a strategy knows which records are on their last delivery."""

HEADER_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
TIMESTAMP_TYPE = pa.timestamp("us", tz="UTC")

# Field order follows Spark's Kafka source; deliveryCount is the share-group addition.
JOURNAL_SCHEMA = pa.schema(
    [
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", TIMESTAMP_TYPE),
        ("timestampType", pa.int32()),
        (HEADERS, HEADER_TYPE),
        ("deliveryCount", pa.int32()),
    ]
)


def arrow_schema(include_headers: bool) -> pa.Schema:
    """The Arrow schema of the rows handed to Spark."""
    if include_headers:
        return JOURNAL_SCHEMA
    return JOURNAL_SCHEMA.remove(JOURNAL_SCHEMA.get_field_index(HEADERS))


def project(table: pa.Table, include_headers: bool) -> pa.Table:
    """Shape a journal table into the rows Spark expects."""
    target = arrow_schema(include_headers)
    return table.select(target.names).cast(target)
