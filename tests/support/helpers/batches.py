"""Arrow rows shaped like those the ``kafka-share`` source hands to a strategy."""

from __future__ import annotations

from collections.abc import Sequence, Sized
from typing import TypeGuard

import pyarrow as pa

from kafka_share_eos.journal.schema import JOURNAL_SCHEMA


def source_record_batch(**columns: object) -> pa.RecordBatch:
    """One record batch of the named columns, in the order they are named.

    Only the named columns are built: a test names the ones its strategy reads and leaves out
    the rest, as a pipeline's ``select`` would.

    A column the source produces (``key``, ``value``, ``topic``, ``partition``, ``offset``,
    ``timestamp``, ``timestampType``, ``headers``, ``deliveryCount``) takes the source's Arrow
    type, so ``partition=[0, 1]`` is ``int32`` as on a real stream; any other column takes the
    type Arrow infers. A single value, such as ``topic="t"``, is repeated on every row. A
    pyarrow array is kept as it is: the way to feed a type the source would not, such as a
    text ``value``.
    """
    lengths = [len(value) for value in columns.values() if _is_column(value)]
    if not lengths:
        raise ValueError("name at least one column with a value for each row")
    return pa.RecordBatch.from_pydict(
        {name: _array(name, value, lengths[0]) for name, value in columns.items()}
    )


def source_rows(**columns: object) -> pa.Table:
    """The rows of :func:`source_record_batch` as a table, the form sinks and Spark are handed."""
    return pa.Table.from_batches([source_record_batch(**columns)])


def _is_column(value: object) -> TypeGuard[Sized]:
    if isinstance(value, pa.Array):
        return True
    return isinstance(value, Sequence) and not isinstance(value, str | bytes)


def _array(name: str, value: object, count: int) -> pa.Array:
    if isinstance(value, pa.Array):
        return value
    rows = value if _is_column(value) else [value] * count
    source_type = JOURNAL_SCHEMA.field(name).type if name in JOURNAL_SCHEMA.names else None
    return pa.array(rows, source_type)


def events(partition_offsets: list[tuple[int, int]], tag: str = "v") -> pa.Table:
    return source_rows(
        topic="t",
        partition=[p for p, _ in partition_offsets],
        offset=[o for _, o in partition_offsets],
        value=pa.array([f"{tag}{p}/{o}" for p, o in partition_offsets], pa.string()),
    )
