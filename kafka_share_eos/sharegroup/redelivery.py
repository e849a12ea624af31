"""How far below the highest offset it delivered a share-partition can still deliver a record.

A share-partition redelivers only records at or above its start offset (SPSO); everything below
is ACKNOWLEDGED or ARCHIVED for good. The broker acquires new records only while
``end offset - SPSO + 1`` is below ``group.share.partition.max.record.locks``, and one fetch
acquires at most one fetch's worth beyond that. So once a record at offset ``M`` was delivered,
the SPSO was already above ``M - (record locks + one fetch)``: a record below ``M - window``,
with ``window`` at least that large, never comes back. The identity ledger prunes what lies
below it, and the Kafka topic sink's progress markers forget it.
"""

from __future__ import annotations

REDELIVERY_WINDOW = 100_000
"""A window that leaves ample room above Kafka's defaults (2000 record locks, 500 records a
fetch)."""
