"""A Delta table holding the identities of records already applied to a sink.

Layout: one row per applied identity plus the application and batch that claimed it
(``_app_id``, ``_batch_id``) and when (``_applied_at``); :mod:`kafka_share_eos.ledger.claims`
says how applications sharing a ledger decide who applies a record. With the default record
identity ``(topic, partition, offset)`` the table is partitioned by ``topic`` and ``partition``;
each batch writes one file per share-partition whose offsets are close together, so the per-file
min/max statistics of ``offset`` let a lookup skip every file whose offset range cannot overlap
the batch. A lookup therefore reads the few recent files of the partitions the batch touches,
not the whole ledger.

With business-key identities there is no natural partitioning; the lookup prunes files on the
min/max of the first key column, which helps when keys grow over time (ids, timestamps).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from kafka_share_eos.errors import ConfigurationError, LocationNotFoundError
from kafka_share_eos.ledger.delta_txn import DeltaLocation, committed_version

if TYPE_CHECKING:
    import pyarrow as pa

    from kafka_share_eos.ledger.claims import Claim
    from kafka_share_eos.ledger.known_claims import KnownClaims

RECORD_IDENTITY: tuple[str, ...] = ("topic", "partition", "offset")
BATCH_COLUMN = "_batch_id"
APPLIED_AT_COLUMN = "_applied_at"
APP_COLUMN = "_app_id"
BOOKKEEPING_COLUMNS = (BATCH_COLUMN, APPLIED_AT_COLUMN, APP_COLUMN)
DEFAULT_APP_ID = "kafka-share-eos.dedup-ledger"

# Old commit files are removed when delta-rs writes a checkpoint; the ledger needs no time travel,
# and a log directory that grows by one file per micro-batch for 30 days (the Delta default) makes
# every listing slower.
LEDGER_TABLE_CONFIGURATION: Mapping[str, str | None] = {
    "delta.logRetentionDuration": "interval 1 day",
    "delta.enableExpiredLogCleanup": "true",
}

_ROW = "__ledger_row"
# Offsets further apart than this are looked up as separate ranges, up to MAX_RANGES per
# partition (beyond that the predicate itself would cost more than the files it skips).
RANGE_GAP = 1000
MAX_RANGES = 16


class IdentityLedger:
    """Identities applied so far, with the last batch id committed under ``app_id``.

    Args:
        uri: Delta table location (local path or object-store URI).
        identity: identity columns; the record identity ``(topic, partition, offset)`` by default.
        app_id: names the application whose batches claim identities (and the Delta
            application transaction of its claims). Applications sharing a ledger need one each.
        storage_options: passed to delta-rs unchanged.
    """

    def __init__(
        self,
        uri: str,
        *,
        identity: Sequence[str] = RECORD_IDENTITY,
        app_id: str = DEFAULT_APP_ID,
        storage_options: Mapping[str, str] | None = None,
    ) -> None:
        if not identity:
            raise ConfigurationError("identity must name at least one column")
        for reserved in BOOKKEEPING_COLUMNS:
            if reserved in identity:
                raise ConfigurationError(f"identity column {reserved!r} is reserved by the ledger")
        self.location = DeltaLocation(uri, storage_options)
        self.identity = tuple(identity)
        self.app_id = app_id
        self._known: KnownClaims | None = None

    @classmethod
    def existing(
        cls,
        uri: str,
        *,
        app_id: str = DEFAULT_APP_ID,
        storage_options: Mapping[str, str] | None = None,
    ) -> IdentityLedger:
        """Open a ledger that exists, taking its identity columns from the table's schema.

        Raises:
            LocationNotFoundError: there is no Delta table at ``uri``.
            ConfigurationError: the Delta table there is not an identity ledger.
        """
        location = DeltaLocation(uri, storage_options)
        table = location.table()
        if table is None:
            raise LocationNotFoundError(f"no Delta ledger table at {uri!r}")
        names = [f.name for f in table.schema().fields]
        identity = [n for n in names if n not in BOOKKEEPING_COLUMNS]
        if BATCH_COLUMN not in names or APPLIED_AT_COLUMN not in names:
            raise ConfigurationError(
                f"Delta table {uri!r} is not an identity ledger: it lacks "
                f"{BATCH_COLUMN!r} and {APPLIED_AT_COLUMN!r} (columns: {names})"
            )
        ledger = cls(uri, identity=identity, app_id=app_id, storage_options=storage_options)
        ledger.location = location
        return ledger

    @property
    def uri(self) -> str:
        """Where the ledger table lives."""
        return self.location.uri

    @property
    def is_record_identity(self) -> bool:
        """True when identities are Kafka record coordinates (enables the offset layout)."""
        return self.identity == RECORD_IDENTITY

    @property
    def partition_by(self) -> list[str]:
        """Partition columns of the ledger table."""
        return ["topic", "partition"] if self.is_record_identity else []

    def known_claims(self) -> KnownClaims | None:
        """What this process knows the ledger holds, for claims without a read (record
        identities only)."""
        if not self.is_record_identity:
            return None
        if self._known is None:
            from kafka_share_eos.ledger.known_claims import KnownClaims

            self._known = KnownClaims()
        return self._known

    def last_batch(self) -> int | None:
        """The highest batch id this application claimed identities for, None before any."""
        return committed_version(self.location, self.app_id)

    def read(
        self, columns: Sequence[str], predicate: str | None = None, *, refresh: bool = True
    ) -> pa.Table | None:
        """Rows matching the SQL ``predicate`` (all rows when None); None while the table is absent.

        delta-rs' own engine evaluates the predicate, skipping partitions and files whose
        statistics rule it out before reading any data. Without ``refresh`` the snapshot last
        seen by this process is read.
        """
        import pyarrow as pa

        table = self.location.table(refresh=refresh)
        if table is None:
            return None
        return pa.table(table.scan(columns=list(columns), predicate=predicate))

    def new_rows(self, batch: pa.Table, *, refresh: bool = True) -> pa.Table:
        """The rows of ``batch`` whose identity is not in the ledger, in their original order.

        Pass ``refresh=False`` right after :meth:`last_batch`, which already refreshed.
        """
        if batch.num_rows == 0:
            return batch
        seen = self.read(self.identity, self.lookup_predicate(batch), refresh=refresh)
        return batch if seen is None else self.new_rows_among(batch, seen)

    def new_rows_among(self, batch: pa.Table, seen: pa.Table) -> pa.Table:
        """The rows of ``batch`` whose identity ``seen`` (identity columns) lacks, in order."""
        if seen.num_rows == 0:
            return batch
        return _rows_joined(batch, self.identity, seen, "left anti")

    def claim(self, batch: pa.Table, batch_id: int) -> Claim:
        """Claim the identities of ``batch`` for batch ``batch_id``; see
        :func:`kafka_share_eos.ledger.claims.claim`."""
        from kafka_share_eos.ledger.claims import claim

        return claim(self, batch, batch_id)

    def lookup_predicate(self, batch: pa.Table) -> str | None:
        """A SQL predicate selecting a superset of the ledger rows that can match ``batch``.

        The anti-join that follows makes the result exact; the predicate only has to be cheap
        and selective enough for file skipping.
        """
        import pyarrow.compute as pc

        # Imported here: sinks.delta loads deltalake, which the ledger loads only when used.
        from kafka_share_eos.sinks.delta import quote_identifier

        if self.is_record_identity:
            return " OR ".join(
                f'("topic" = {sql_literal(topic)} AND "partition" = {partition}'
                f' AND "offset" BETWEEN {lo} AND {hi})'
                for (topic, partition), ranges in offset_ranges(batch).items()
                for lo, hi in ranges
            )
        first = self.identity[0]
        bounds = pc.min_max(batch.column(first)).as_py()
        lo, hi = bounds["min"], bounds["max"]
        if not all(isinstance(v, str | int) and not isinstance(v, bool) for v in (lo, hi)):
            return None  # no range pruning for other types: every file is read
        return f"{quote_identifier(first)} BETWEEN {sql_literal(lo)} AND {sql_literal(hi)}"


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
    return _rows_joined(batch, identity, wanted, "left semi")


def _rows_joined(
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


def sql_literal(value: str | int) -> str:
    """``value`` as a SQL literal for delta-rs predicates."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise TypeError(f"no SQL literal for {value!r}")
    if isinstance(value, int):
        return str(value)
    return "'" + value.replace("'", "''") + "'"
