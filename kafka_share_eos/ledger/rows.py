"""What every module of the ledger shares: its bookkeeping columns and the Arrow helpers that
pick, join and range its rows. Nothing here knows the Delta table, so the ledger, its claims,
their in-process memory and its retention can all build on it without importing each other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from kafka_share_eos import formats
from kafka_share_eos.errors import ConfigurationError

if TYPE_CHECKING:
    import pyarrow as pa

RECORD_IDENTITY: tuple[str, ...] = ("topic", "partition", "offset")
BATCH_COLUMN = "_batch_id"
APPLIED_AT_COLUMN = "_applied_at"
APP_COLUMN = "_app_id"
BOOKKEEPING_COLUMNS = (BATCH_COLUMN, APPLIED_AT_COLUMN, APP_COLUMN)
DEFAULT_APP_ID = "kafka-share-eos.dedup-ledger"

# Old commit files are removed when delta-rs writes a checkpoint; the ledger needs no time travel,
# and a log directory that grows by one file per micro-batch for 30 days (the Delta default) makes
# every listing slower. The format version tells later releases how to read the table.
LEDGER_TABLE_CONFIGURATION: Mapping[str, str | None] = {
    "delta.logRetentionDuration": "interval 1 day",
    "delta.enableExpiredLogCleanup": "true",
    formats.TABLE_PROPERTY: str(formats.LEDGER_TABLE),
}


class Claimant(Protocol):
    """A ledger as its claims see it, on Delta or on Iceberg: the identity columns, and the
    application whose batches claim identities."""

    @property
    def identity(self) -> tuple[str, ...]: ...

    @property
    def app_id(self) -> str: ...


def checked_identity(identity: Sequence[str]) -> tuple[str, ...]:
    """The identity columns of a ledger, as a tuple.

    Raises:
        ConfigurationError: no column, or a bookkeeping column of the ledger's own.
    """
    if not identity:
        raise ConfigurationError("identity must name at least one column")
    for reserved in BOOKKEEPING_COLUMNS:
        if reserved in identity:
            raise ConfigurationError(f"identity column {reserved!r} is reserved by the ledger")
    return tuple(identity)


_ROW = "__ledger_row"
# Offsets further apart than this are looked up as separate ranges, up to MAX_RANGES per
# partition (beyond that the predicate itself would cost more than the files it skips).
RANGE_GAP = 1000
MAX_RANGES = 16


def offset_ranges(
    batch: pa.Table, max_gap: int = RANGE_GAP, max_ranges: int = MAX_RANGES
) -> dict[tuple[str, int], list[tuple[int, int]]]:
    """Cover each partition's offsets with few ``(lo, hi)`` ranges, split where they jump by over
    ``max_gap``; a partition needing more than ``max_ranges`` gets one range from min to max.

    A batch typically holds a run of new offsets plus a few redeliveries from further back; one
    range over all of them would cover every ledger file in between. Vectorised: a sort, then
    Python only touches the range boundaries.
    """
    import pyarrow.compute as pc

    keys = batch.select(["topic", "partition", "offset"])
    keys = keys.take(pc.sort_indices(keys, [(c, "ascending") for c in keys.column_names]))
    topic, partition, offset = (keys.column(c).combine_chunks() for c in keys.column_names)
    n = keys.num_rows
    if n == 0:
        return {}
    later, earlier = slice(1, n), slice(0, n - 1)
    breaks = pc.or_(
        pc.or_(pc.not_equal(topic[later], topic[earlier]),
               pc.not_equal(partition[later], partition[earlier])),
        pc.greater(pc.subtract(offset[later], offset[earlier]), max_gap),
    )
    starts = [0, *(i + 1 for i in pc.indices_nonzero(breaks).to_pylist())]
    ends = [*(i - 1 for i in starts[1:]), n - 1]
    ranges: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for first, last in zip(starts, ends, strict=True):
        key = (topic[first].as_py(), int(partition[first].as_py()))
        ranges.setdefault(key, []).append((offset[first].as_py(), offset[last].as_py()))
    return {
        key: spans if len(spans) <= max_ranges else [(spans[0][0], spans[-1][1])]
        for key, spans in ranges.items()
    }


def highest_offsets(keys: pa.Table) -> dict[tuple[str, int], int]:
    """The highest offset of each ``(topic, partition)`` of ``keys`` (those columns and
    ``offset``); a partition whose offsets are all null is left out."""
    grouped = keys.group_by(["topic", "partition"], use_threads=False).aggregate(
        [("offset", "max")]
    )
    return {
        (str(t), int(p)): int(o)
        for t, p, o in zip(grouped["topic"].to_pylist(), grouped["partition"].to_pylist(),
                           grouped["offset_max"].to_pylist(), strict=True)
        if o is not None
    }


def file_highest_offsets(actions: pa.Table) -> dict[tuple[str, int], int]:
    """:func:`highest_offsets` of a record ledger's files, from its flattened add actions'
    ``max.offset`` statistics (no data read); files without the statistic do not count."""
    columns = {"partition.topic": "topic", "partition.partition": "partition",
               "max.offset": "offset"}
    return highest_offsets(actions.select(list(columns)).rename_columns(list(columns.values())))


def select_in_order(
    batch: pa.Table, identity: Sequence[str], *keys: pa.Table
) -> pa.Table:
    """The rows of ``batch`` whose identity is in any of ``keys`` (tables holding at least the
    identity columns), in batch order."""
    import pyarrow as pa

    wanted = pa.concat_tables(
        [k.select(list(identity)).cast(batch.select(list(identity)).schema) for k in keys]
    )
    if wanted.num_rows == 0:
        return batch.slice(0, 0)
    return rows_joined(batch, identity, wanted, "left semi")


def rows_joined(
    batch: pa.Table, identity: Sequence[str], keys: pa.Table, join_type: str
) -> pa.Table:
    """``batch`` joined with ``keys`` on ``identity`` (``left anti`` or ``left semi``), rows
    kept in batch order."""
    import pyarrow as pa
    import pyarrow.compute as pc

    own = batch.select(list(identity))
    keys = keys.select(list(identity)).cast(own.schema)
    ones = pa.repeat(pa.scalar(1, pa.int64()), batch.num_rows)
    numbers = pc.subtract(pc.cumulative_sum(ones), 1)
    kept = own.append_column(_ROW, numbers).join(
        keys, keys=list(identity), join_type=join_type
    ).column(_ROW)
    return rows_where(batch, pc.is_in(numbers, value_set=kept.combine_chunks()))


def rows_where(batch: pa.Table, mask: pa.Array | pa.ChunkedArray) -> pa.Table:
    """The rows of ``batch`` where ``mask`` is true, in order: a zero-copy slice when they are
    one run (the batch whole, or all but redeliveries gathered at one end), else a filter,
    which copies the kept values in runs (gathering them by index costs several times more
    for wide rows)."""
    import pyarrow.compute as pc

    kept = pc.indices_nonzero(mask)
    if len(kept) == 0:
        return batch.slice(0, 0)
    first, last = kept[0].as_py(), kept[-1].as_py()
    if last - first + 1 == len(kept):
        return batch.slice(first, len(kept))
    return batch.filter(mask)
