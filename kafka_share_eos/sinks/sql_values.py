"""Arrow rows as the Python values DB-API drivers accept, for parameters and ``COPY``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc


def python_rows(table: pa.Table, *, for_copy: bool = False) -> Iterator[tuple[Any, ...]]:
    """Row tuples of Python objects the DB-API drivers accept.

    ``for_copy`` renders timestamps as text PostgreSQL's COPY parses (UTC, marked ``+00`` when
    the Arrow type has a time zone); building Python datetimes would take most of the conversion
    time.
    """
    columns = []
    for column in table.columns:
        if pa.types.is_timestamp(column.type):
            if column.type.unit == "ns":
                # Python datetimes (and both databases) stop at microseconds.
                column = pc.cast(column, pa.timestamp("us", column.type.tz), safe=False)
            if for_copy:
                # Through a zone-less type: formatting with a time zone costs 20x more.
                text = pc.cast(column.cast(pa.timestamp("us")), pa.string())
                column = pc.binary_join_element_wise(text, "+00", "") if column.type.tz else text
        columns.append(column.to_pylist())
    return zip(*columns, strict=True)
