"""What the tests of the Postgres participant share: the record keys, and SQL run on the side."""

from __future__ import annotations

import pyarrow as pa
import sqlalchemy as sa

KEYS = ["topic", "partition", "offset"]


def keys_of(records: pa.Table) -> pa.Table:
    return records.select(KEYS)


def run_sql(url: str, statement: str) -> list[tuple[object, ...]]:
    """Run ``statement`` and commit; the rows it returns, if any."""
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        result = conn.exec_driver_sql(statement)
        rows = [tuple(row) for row in result.all()] if result.returns_rows else []
    engine.dispose()
    return rows
