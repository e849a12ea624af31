"""An Iceberg append sink that applies each micro-batch at most once.

Each batch reads the table's current snapshot. When its application's watermark (see
:mod:`kafka_share_eos.iceberg.snapshots`) shows the batch committed, nothing is written: a
replay after a crash, after a commit whose answer was lost, or after the snapshot of that
commit expired. Otherwise the rows are appended in one snapshot carrying the batch's
properties, committed only onto the snapshot the watermark was read from (pyiceberg's
rebase-and-retry is off): when another writer committed meanwhile, the batch starts over from
the new snapshot, whose watermark may now show it committed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from kafka_share_eos import faults
from kafka_share_eos._names import names
from kafka_share_eos.delta.transactions import check_batch_order
from kafka_share_eos.errors import MissingColumnsError
from kafka_share_eos.iceberg.snapshots import commit_marked, commit_record
from kafka_share_eos.iceberg.tables import as_table_types, without_rebase
from kafka_share_eos.sinks.iceberg_target import IcebergTarget

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog

DEFAULT_APP_ID_PREFIX = "kafka-share-eos/iceberg-append"


class IcebergAppendSink:
    """Appends each batch to an Iceberg table in one snapshot recording ``(app_id, batch_id)``.

    It keeps the promise
    :class:`~kafka_share_eos.strategies.checkpoint_dedup.CheckpointDedupStore` needs from a
    sink: the append is atomic, and a second call for a batch id already committed does
    nothing.

    Args:
        table: the table's identifier in the catalog (``"db.events"``).
        catalog: a pyiceberg ``Catalog`` or its configuration dict (see
            :class:`~kafka_share_eos.iceberg.catalogs.IcebergCatalog`).
        create_table: create the table (and its namespace) from the first batch's schema when
            the catalog has none; without it a missing table is refused.
        app_id: the application id the snapshots record batches under; one per (query,
            table). By default ``"kafka-share-eos/iceberg-append:<query id>"`` once
            :meth:`bind_streaming_query` is called (the checkpoint-dedup store calls it),
            ``"kafka-share-eos/iceberg-append:<catalog>.<table>"`` before.
        columns: columns to write, in this order; all columns of the batch when None.
        max_commit_attempts: how often a batch is attempted when other writers commit first.

    Raises:
        MissingExtraError: pyiceberg is not installed.
        SinkConfigurationError: an identifier without a namespace, a ``catalog`` of another
            kind, or ``max_commit_attempts`` below 1.
    """

    def __init__(
        self,
        table: str,
        *,
        catalog: Catalog | Mapping[str, Any],
        create_table: bool = False,
        app_id: str | None = None,
        columns: str | Sequence[str] | None = None,
        max_commit_attempts: int = 5,
    ) -> None:
        self.table = IcebergTarget(table, catalog, create_table=create_table,
                                   what="IcebergAppendSink",
                                   max_commit_attempts=max_commit_attempts)
        self.app_id = app_id or f"{DEFAULT_APP_ID_PREFIX}:{self.table.catalog.name}.{table}"
        self._app_id_given = app_id is not None
        self.query_id: str | None = None
        self.columns = names(columns) if columns is not None else None

    @property
    def target(self) -> str:
        """The table as ``iceberg:<catalog>.<table>``."""
        return self.table.target

    def bind_streaming_query(self, query_id: str) -> None:
        """Record batch ids under the streaming query's id, unless an ``app_id`` was given."""
        self.query_id = query_id
        if not self._app_id_given:
            self.app_id = f"{DEFAULT_APP_ID_PREFIX}:{query_id}"

    def __call__(self, rows: pa.Table, batch_id: int) -> bool:
        """Append ``rows`` as batch ``batch_id``; False when that batch was already committed.

        Raises:
            MissingColumnsError: the batch lacks one of ``columns``.
            SinkConfigurationError: a column does not cast to the table's type for it.
            AppIdConflictError: the table holds a later batch of this ``app_id``.
            CommitConflictError: other writers committed first on every attempt.
        """
        rows = self._selected(rows)
        return self.table.committing(f"appending batch {batch_id}",
                                     lambda: self._append(rows, batch_id))

    def check_target(self) -> None:
        """Check, before any record is read, that the table is there (or will be created)
        and can take the appends.

        Raises:
            TargetTableError: the table is missing without ``create_table``, or has equality
                deletes or a format version above 2.
        """
        self.table.check_target(self.columns or ())

    def check(self, rows: pa.Table) -> None:
        """Raise what appending ``rows`` would raise about them; writes nothing."""
        rows = self._selected(rows)
        table = self.table.load()
        if table is not None:
            self.table.check(table, rows.column_names)
            as_table_types(rows, table, self.target)

    def close(self) -> None:
        """Drop the catalog built by this sink (the next batch builds it again)."""
        self.table.close()

    def _selected(self, rows: pa.Table) -> pa.Table:
        if self.columns is None:
            return rows
        missing = [c for c in self.columns if c not in rows.column_names]
        if missing:
            raise MissingColumnsError(f"the batch given to IcebergAppendSink({self.target})",
                                      missing, rows.column_names)
        return rows.select(self.columns)

    def _append(self, rows: pa.Table, batch_id: int) -> bool:
        """One attempt on the current snapshot; raises ``CommitFailedException`` when another
        writer committed first."""
        table = self.table.opened(rows.schema)
        record = commit_record(table)
        recorded = check_batch_order(record.committed(self.app_id), self.app_id, batch_id,
                                     self.target)
        if recorded == batch_id:
            return False
        rows = as_table_types(rows, table, self.target)
        transaction = without_rebase(table).transaction()
        transaction.append(rows, snapshot_properties=record.properties(
            self.app_id, batch_id, self.query_id))
        faults.maybe_crash(faults.SINK_MID_WRITE)
        commit_marked(transaction)
        return True
