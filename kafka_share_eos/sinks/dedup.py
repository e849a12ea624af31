"""In-batch deduplication of Arrow tables on identity columns, and batches against stored keys."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc


def _free_column_name(table: pa.Table, base: str) -> str:
    name = base
    while name in table.column_names:
        name = f"_{name}"
    return name


def _all_distinct(table: pa.Table, keys: Sequence[str]) -> bool:
    """Whether no two rows of ``table`` share their ``keys``."""
    # Single-threaded: for one batch's keys the thread pool costs more than it saves, the more
    # so on a busy machine.
    distinct = table.select(list(keys)).group_by(list(keys), use_threads=False).aggregate([])
    return bool(distinct.num_rows == table.num_rows)


def real_versions(versions: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Which ``versions`` are real: not null and, for floating-point versions, not NaN."""
    real = pc.is_valid(versions)
    if pa.types.is_floating(versions.type):
        real = pc.and_(real, pc.invert(pc.fill_null(pc.is_nan(versions), True)))
    return real


def newer_versions(
    incoming: pa.Array | pa.ChunkedArray, stored: pa.Array | pa.ChunkedArray
) -> pa.Array | pa.ChunkedArray:
    """Which ``incoming`` versions replace the ``stored`` ones: a real version replaces a
    strictly lower one and a null or NaN one; a null or NaN version replaces nothing."""
    higher = pc.fill_null(pc.greater(incoming, stored), False)
    return pc.and_(real_versions(incoming), pc.or_(pc.invert(real_versions(stored)), higher))


def keep_latest(
    table: pa.Table, key_columns: Sequence[str], version_column: str | None = None
) -> pa.Table:
    """Return ``table`` with one row per key, keeping the original row order.

    Without a version column the first occurrence of each key is kept (redeliveries of one
    record carry the same content). With one, the row with the highest version wins; among equal
    versions the one that came last in the batch wins; a null or NaN version loses to any other.
    """
    keys = list(key_columns)
    if table.num_rows <= 1 or _all_distinct(table, keys):
        return table
    row = _free_column_name(table, "__row")
    numbered = table.select([*keys, *([version_column] if version_column else [])])
    numbered = numbered.append_column(row, pa.array(range(table.num_rows), pa.int64()))
    if version_column is None:
        picked = numbered.group_by(keys).aggregate([(row, "min")])[f"{row}_min"]
    else:
        # Real versions first (Arrow sorts NaN above every number); "first" needs ordered,
        # single-threaded grouping.
        real = _free_column_name(numbered, "__real")
        numbered = numbered.append_column(real, real_versions(numbered[version_column]))
        ordered = numbered.sort_by(
            [(real, "descending"), (version_column, "descending"), (row, "descending")]
        )
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


@dataclass(frozen=True)
class StoredSplit:
    """A batch's rows by what the target needs: absent identities, and newer versions."""

    absent: pa.Table
    newer: pa.Table


def split_by_stored(
    rows: pa.Table, stored: pa.Table, key_columns: Sequence[str], version_column: str | None
) -> StoredSplit:
    """Split ``rows`` (unique on ``key_columns``) by the target's ``stored`` rows.

    ``stored`` holds the key columns and, with ``version_column``, the stored version, typed
    like ``rows``. A row is *absent* when its key is not stored, *newer* when it is stored with a
    strictly lower version, or a null or NaN one (see :func:`newer_versions`); the other rows are
    already applied. Both parts keep the batch's row order.
    """
    if stored.num_rows == 0:
        # The steady state of a stream: nothing to join, nothing to copy.
        return StoredSplit(rows, rows.slice(0, 0))
    keys = list(key_columns)
    row = _free_column_name(rows, "__row")
    numbered = rows.select(
        [*keys, *([version_column] if version_column else [])]
    ).append_column(row, pa.array(range(rows.num_rows), pa.int64()))
    newer = pa.array([], pa.int64())
    if version_column is None:
        held = numbered.join(stored.select(keys), keys=keys, join_type="left semi")[row]
    else:
        stored_version = _free_column_name(numbered, "__stored_version")
        pairs = numbered.join(
            stored.select([*keys, version_column]).rename_columns([*keys, stored_version]),
            keys=keys,
            join_type="inner",
        )
        held = pairs[row]
        is_newer = newer_versions(pairs[version_column], pairs[stored_version])
        newer = pairs.filter(is_newer)[row]
        # The hash join does not keep the batch's order.
        newer = newer.take(pc.sort_indices(newer))
    if len(held) == 0:
        # Stored keys near the batch's, none of its own: no copy of the batch.
        return StoredSplit(rows, rows.slice(0, 0))
    absent = pc.invert(pc.is_in(numbered[row], value_set=held.combine_chunks()))
    return StoredSplit(rows.filter(absent), rows.take(newer))
