"""In-batch deduplication of Arrow tables on identity columns."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc


def _free_column_name(table: pa.Table, base: str) -> str:
    name = base
    while name in table.column_names:
        name = f"_{name}"
    return name


def keep_latest(
    table: pa.Table, key_columns: Sequence[str], version_column: str | None = None
) -> pa.Table:
    """Return ``table`` with one row per key, keeping the original row order.

    Without a version column the first occurrence of each key is kept (redeliveries of one
    record carry the same content). With one, the row with the highest version wins; among equal
    versions the one that came last in the batch wins; a null version loses to any other.
    """
    keys = list(key_columns)
    if table.num_rows <= 1:
        return table
    distinct = table.select(keys).group_by(keys).aggregate([]).num_rows
    if distinct == table.num_rows:
        return table
    row = _free_column_name(table, "__row")
    numbered = table.select([*keys, *([version_column] if version_column else [])])
    numbered = numbered.append_column(row, pa.array(range(table.num_rows), pa.int64()))
    if version_column is None:
        picked = numbered.group_by(keys).aggregate([(row, "min")])[f"{row}_min"]
    else:
        # Nulls sort last by default; "first" needs ordered, single-threaded grouping.
        ordered = numbered.sort_by([(version_column, "descending"), (row, "descending")])
        picked = ordered.group_by(keys, use_threads=False).aggregate([(row, "first")])[
            f"{row}_first"
        ]
    return table.take(pc.take(picked, pc.sort_indices(picked)))


def contained(rows: pa.Table, stored: pa.Table) -> list[bool]:
    """For each row of ``rows``, whether ``stored`` holds a row equal on every column of ``rows``.

    ``stored`` may have more columns and other (castable) types: keys read back from a target.
    """
    names = rows.column_names
    if rows.num_rows == 0 or stored.num_rows == 0:
        return [False] * rows.num_rows
    row = _free_column_name(rows, "__row")
    numbered = rows.append_column(row, pa.array(range(rows.num_rows), pa.int64()))
    found = numbered.join(stored.select(names).cast(rows.schema), keys=names, join_type="left semi")
    hits = set(found[row].to_pylist())
    return [index in hits for index in range(rows.num_rows)]
