"""Source-shaped rows for the upsert sink under Spark, and the identities it stored in SQL."""

from __future__ import annotations

import pyarrow as pa
import sqlalchemy as sa

from helpers.batches import source_rows


def records(offsets: list[tuple[int, int]], delivery: int = 1) -> pa.Table:
    """Source-shaped rows for (partition, offset) pairs."""
    return source_rows(
        topic="t",
        partition=[p for p, _ in offsets],
        offset=[o for _, o in offsets],
        value=[f"{p}:{o}".encode() for p, o in offsets],
        deliveryCount=delivery,
    )


def sql_identities(url: str) -> list[tuple[str, int, int, bytes]]:
    engine = sa.create_engine(url)
    table = sa.Table("events", sa.MetaData(), autoload_with=engine)
    with engine.connect() as conn:
        rows = conn.execute(
            sa.select(table.c.topic, table.c.partition, table.c.offset, table.c.value)
        )
        result = sorted(tuple(r) for r in rows)
    engine.dispose()
    return result
