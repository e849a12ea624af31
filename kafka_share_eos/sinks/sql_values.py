"""Arrow rows as values PostgreSQL and the DB-API drivers accept: Python rows for parameters and
``COPY``, and whole columns as PostgreSQL array literals."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from kafka_share_eos.errors import ConfigurationError


def python_rows(table: pa.Table, *, for_copy: bool = False) -> Iterator[tuple[Any, ...]]:
    """Row tuples of Python objects the DB-API drivers accept.

    ``for_copy`` renders timestamps as text PostgreSQL's COPY parses (UTC, marked ``+00`` when
    the Arrow type has a time zone); building Python datetimes would take most of the conversion
    time.
    """
    columns = []
    for column in table.columns:
        if pa.types.is_timestamp(column.type):
            if for_copy:
                column = _timestamp_text(column)
            elif column.type.unit == "ns":
                # Python datetimes (and both databases) stop at microseconds.
                column = pc.cast(column, pa.timestamp("us", column.type.tz), safe=False)
        columns.append(column.to_pylist())
    return zip(*columns, strict=True)


def _timestamp_text(column: pa.Array) -> pa.Array:
    if column.type.unit == "ns":
        # PostgreSQL stops at microseconds.
        column = pc.cast(column, pa.timestamp("us", column.type.tz), safe=False)
    # Through a zone-less type: formatting with a time zone costs 20x more.
    text = pc.cast(column.cast(pa.timestamp("us")), pa.string())
    return pc.binary_join_element_wise(text, "+00", "") if column.type.tz else text


def postgres_array(column: pa.Array | pa.ChunkedArray) -> str:
    """A PostgreSQL array literal holding ``column``'s values (nulls as ``NULL``), for a
    parameter cast to an array type: ``unnest(CAST(:amounts AS bigint[]))``.

    Arrow builds the text, with no Python object per value: sending a batch's column this way
    costs a fraction of a list parameter. Integers, floats, decimals, booleans, strings, dates
    and timestamps (as UTC) are supported.

    Raises:
        ConfigurationError: the column's type has no array literal here (binary, nested...).
    """
    values = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    kind = values.type
    types = pa.types
    if types.is_timestamp(kind):
        text = _timestamp_text(values)
    elif types.is_integer(kind) or types.is_floating(kind) or types.is_decimal(kind) or (
        types.is_boolean(kind) or types.is_date(kind) or types.is_string(kind)
        or types.is_large_string(kind)
    ):
        text = pc.cast(values, pa.string())
    else:
        raise ConfigurationError(
            f"an Arrow column of type {kind} has no PostgreSQL array literal here; "
            "cast it (e.g. to string) first"
        )
    if types.is_string(kind) or types.is_large_string(kind) or types.is_timestamp(kind) or (
        types.is_date(kind)
    ):
        escaped = pc.replace_substring(pc.replace_substring(text, "\\", "\\\\"), '"', '\\"')
        text = pc.binary_join_element_wise('"', escaped, '"', "")
    text = pc.fill_null(text, "NULL")
    if len(text) == 0:
        return "{}"
    whole = pa.ListArray.from_arrays(pa.array([0, len(text)], pa.int32()), text)
    return "{" + str(pc.binary_join(whole, ",")[0].as_py()) + "}"
