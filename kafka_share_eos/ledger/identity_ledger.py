"""A Delta table holding the identities of records already applied to a sink.

Layout: one row per applied identity plus the batch that applied it (``_batch_id``) and when
(``_applied_at``). With the default record identity ``(topic, partition, offset)`` the table is
partitioned by ``topic`` and ``partition``; each batch writes one file per share-partition whose
offsets are close together, so the per-file min/max statistics of ``offset`` let a lookup skip
every file whose offset range cannot overlap the batch. A lookup therefore reads the few recent
files of the partitions the batch touches, not the whole ledger.

With business-key identities there is no natural partitioning; the lookup prunes files on the
min/max of the first key column, which helps when keys grow over time (ids, timestamps).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from kafka_share_eos.errors import ConfigurationError, LocationNotFoundError
from kafka_share_eos.ledger.delta_txn import DeltaLocation, append_once, committed_version

if TYPE_CHECKING:
    import pyarrow as pa

RECORD_IDENTITY: tuple[str, ...] = ("topic", "partition", "offset")
BATCH_COLUMN = "_batch_id"
APPLIED_AT_COLUMN = "_applied_at"
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
        app_id: Delta application-transaction id that marks batches as recorded. One ledger
            serves one streaming query: a second query needs its own ``app_id`` *and* must not
            share identities, so give it its own ledger.
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
        for reserved in (BATCH_COLUMN, APPLIED_AT_COLUMN):
            if reserved in identity:
                raise ConfigurationError(f"identity column {reserved!r} is reserved by the ledger")
        self.location = DeltaLocation(uri, storage_options)
        self.identity = tuple(identity)
        self.app_id = app_id

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
        identity = [n for n in names if n not in (BATCH_COLUMN, APPLIED_AT_COLUMN)]
        if len(identity) == len(names):
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

    def last_batch(self) -> int | None:
        """The highest batch id recorded, None before the first one."""
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
        import pyarrow as pa
        import pyarrow.compute as pc

        if batch.num_rows == 0:
            return batch
        seen = self.read(self.identity, self._lookup_predicate(batch), refresh=refresh)
        if seen is None or seen.num_rows == 0:
            return batch
        keys = batch.select(list(self.identity))
        seen = seen.cast(keys.schema)
        ones = pa.repeat(pa.scalar(1, pa.int64()), batch.num_rows)
        numbered = keys.append_column(_ROW, pc.subtract(pc.cumulative_sum(ones), 1))
        fresh = numbered.join(seen, keys=list(self.identity), join_type="left anti")
        rows = fresh.column(_ROW)
        # the hash join does not keep input order; sinks see rows as the batch had them
        return batch.take(rows.take(pc.sort_indices(rows)))

    def record(self, batch: pa.Table, batch_id: int) -> bool:
        """Add the identities of ``batch`` and mark ``batch_id`` recorded, in one Delta commit.

        Returns False (and writes nothing) when ``batch_id`` was already recorded.
        """
        import pyarrow as pa

        rows = batch.select(list(self.identity))
        rows = rows.append_column(
            BATCH_COLUMN, pa.repeat(pa.scalar(batch_id, pa.int64()), rows.num_rows)
        ).append_column(
            APPLIED_AT_COLUMN,
            pa.repeat(pa.scalar(_now(), pa.timestamp("us", tz="UTC")), rows.num_rows),
        )
        existing = self.location.table(refresh=False)
        if existing is not None:
            # an int64 partition from pandas must land in the int32 column Spark created
            rows = rows.cast(pa.schema(existing.schema().to_arrow()))
        return append_once(
            self.location,
            rows,
            app_id=self.app_id,
            batch_id=batch_id,
            partition_by=self.partition_by,
            configuration=LEDGER_TABLE_CONFIGURATION,
        )

    def _lookup_predicate(self, batch: pa.Table) -> str | None:
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


def sql_literal(value: str | int) -> str:
    """``value`` as a SQL literal for delta-rs predicates."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise TypeError(f"no SQL literal for {value!r}")
    if isinstance(value, int):
        return str(value)
    return "'" + value.replace("'", "''") + "'"


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)
