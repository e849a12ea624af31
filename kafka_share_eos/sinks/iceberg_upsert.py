"""Idempotent upserts into Iceberg tables through pyiceberg, committed at most once per batch.

Each batch reads the table's current snapshot. When its application's watermark (see
:mod:`kafka_share_eos.iceberg.snapshots`) shows the batch committed, it is skipped without
writing: a replay after a crash, after a commit whose answer was lost, or after the snapshots
of that commit expired. Otherwise the batch reads which of its keys the table holds (only the
key and version columns, of the files whose statistics can match) and drops the rows already
applied. Rows whose key is absent are appended; with a version column, rows replacing a
stored row of a strictly lower version are written copy-on-write
(:func:`~kafka_share_eos.sinks.iceberg_rewrite.replace_rows`: the data files holding those
keys rewritten without them, beside the batch's rows). Either is one snapshot, carrying the
batch's properties and every application's watermark.

The transaction commits only onto the snapshot it was decided on: pyiceberg's own
rebase-and-retry is off (:func:`~kafka_share_eos.iceberg.tables.without_rebase`), so when
another writer committed meanwhile the commit fails and the batch starts over from the new
snapshot, where that writer's keys are seen.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from kafka_share_eos import faults
from kafka_share_eos.delta.transactions import check_batch_order
from kafka_share_eos.errors import BatchIdReusedError
from kafka_share_eos.iceberg.snapshots import commit_marked, commit_record
from kafka_share_eos.iceberg.tables import as_table_types, load_table, without_rebase
from kafka_share_eos.sinks.columns import require_columns
from kafka_share_eos.sinks.dedup import contained, split_by_stored
from kafka_share_eos.sinks.iceberg_keys import stored_keys
from kafka_share_eos.sinks.iceberg_rewrite import replace_rows
from kafka_share_eos.sinks.iceberg_target import IcebergTarget
from kafka_share_eos.sinks.outcome import UpsertOutcome

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog
    from pyiceberg.table import Table

DEFAULT_APP_ID_PREFIX = "kafka-share-eos/upsert"


class IcebergUpsertWriter(IcebergTarget):
    """Idempotent writer into one Iceberg table; rows of a batch must be unique on the keys.

    Args:
        table: the table's identifier in the catalog (``"db.events"``).
        catalog: a pyiceberg ``Catalog`` or its configuration (see
            :class:`~kafka_share_eos.iceberg.catalogs.IcebergCatalog`).
        key_columns: columns that identify a row.
        version_column: when given, a row replaces the stored one only if its version is higher.
        app_id: the application id the snapshots record batches under. Batch ids restart at 0
            with a new checkpoint, so each streaming query needs its own. Without one, it is
            ``"kafka-share-eos/upsert:<query id>"`` once :meth:`bind_streaming_query` is called,
            and ``"kafka-share-eos/upsert:<catalog>.<table>"`` before that.
        create_table: create the table (and its namespace) from the first batch's schema when
            the catalog has none; without it a missing table is refused.
        max_commit_attempts: how often a batch is attempted when other writers commit first.
        retry_backoff_seconds: pause before the second attempt, doubled on each further one.

    Raises:
        SinkConfigurationError: ``max_commit_attempts`` below 1, an identifier without a
            namespace, or a ``catalog`` of another kind.
    """

    def __init__(
        self,
        table: str,
        *,
        catalog: Catalog | Mapping[str, Any],
        key_columns: Sequence[str],
        version_column: str | None = None,
        app_id: str | None = None,
        create_table: bool = False,
        max_commit_attempts: int = 5,
        retry_backoff_seconds: float = 0.1,
    ) -> None:
        super().__init__(table, catalog, create_table=create_table,
                         what="IdempotentUpsertSink.iceberg",
                         max_commit_attempts=max_commit_attempts,
                         retry_backoff_seconds=retry_backoff_seconds)
        self.key_columns = tuple(key_columns)
        self.version_column = version_column
        self.app_id = app_id or f"{DEFAULT_APP_ID_PREFIX}:{self.catalog.name}.{table}"
        self._app_id_given = app_id is not None
        self.query_id: str | None = None

    def bind_streaming_query(self, query_id: str) -> None:
        """Record batch ids under the streaming query's id, unless an ``app_id`` was given."""
        self.query_id = query_id
        if not self._app_id_given:
            self.app_id = f"{DEFAULT_APP_ID_PREFIX}:{query_id}"

    def check_target(self, columns: Sequence[str] = ()) -> None:
        """Check, before any record is read, that the table is there (or will be created) and
        can take the writes.

        Raises:
            TargetTableError: the table is missing without ``create_table``, or is one the
                writer cannot keep correct (equality deletes, format version above 2).
            MissingColumnsError: the table lacks a key or version column, or one of
                ``columns``.
        """
        super().check_target(
            [*self.key_columns, *filter(None, [self.version_column]), *columns])

    def prepare(self, schema: pa.Schema) -> None:
        """Check that the table (created now if missing and allowed) takes ``schema``."""
        self.check(self.opened(schema), self.key_columns)

    def upsert(self, table: pa.Table, batch_id: int) -> UpsertOutcome:
        """Write ``table`` as batch ``batch_id``; lost commit races are retried a bounded number.

        Raises:
            CommitConflictError: other writers committed first on every attempt.
            AppIdConflictError: the table holds a later batch of this ``app_id``.
            BatchIdReusedError: the table holds this batch of this ``app_id``, without every
                key of these rows.
        """
        if table.num_rows == 0:
            return UpsertOutcome(0, 0, "append")
        require_columns(table, [*self.key_columns, *filter(None, [self.version_column])],
                        f"batch {batch_id} for {self.target}")
        return self.committing(f"batch {batch_id} of app id {self.app_id!r}",
                               lambda: self._apply(table, batch_id))

    def applied(self, keys: pa.Table) -> list[bool]:
        """For each row of ``keys``, whether the table holds its key; reads, never writes."""
        table = load_table(self.catalog.catalog(), self.identifier)
        keys = keys.select(list(self.key_columns))
        if table is None:
            return [False] * keys.num_rows
        return contained(keys, stored_keys(table, keys, self.key_columns))

    def _apply(self, rows: pa.Table, batch_id: int) -> UpsertOutcome:
        """One attempt at the batch on the current snapshot; raises ``CommitFailedException``
        when another writer committed first."""
        table = load_table(self.catalog.catalog(), self.identifier)
        if table is None:
            self.prepare(rows.schema)
            table = load_table(self.catalog.catalog(), self.identifier)
            assert table is not None
        # Checked on every batch: another engine may have changed the table since.
        self.check(table, rows.column_names)
        rows = as_table_types(rows, table, self.target)
        record = commit_record(table)
        recorded = check_batch_order(record.committed(self.app_id), self.app_id, batch_id,
                                     self.target)
        if recorded == batch_id:
            self._check_replay(table, rows, batch_id)
            return UpsertOutcome(0, rows.num_rows, "skipped-batch")
        version = [self.version_column] if self.version_column else []
        stored = stored_keys(table, rows, self.key_columns, [*self.key_columns, *version])
        split = split_by_stored(rows, stored, self.key_columns, self.version_column)
        written = split.absent.num_rows + split.newer.num_rows
        if written == 0:
            return UpsertOutcome(0, rows.num_rows, "append")
        properties = record.properties(self.app_id, batch_id, self.query_id)
        transaction = without_rebase(table).transaction()
        if split.newer.num_rows:
            replace_rows(transaction, table, pa.concat_tables([split.absent, split.newer]),
                         split.newer.select(list(self.key_columns)), properties)
            path = "overwrite"
        else:
            transaction.append(split.absent, snapshot_properties=properties)
            path = "append"
        faults.maybe_crash(faults.SINK_MID_WRITE)
        commit_marked(transaction)
        return UpsertOutcome(written, rows.num_rows - written, path)

    def _check_replay(self, table: Table, rows: pa.Table, batch_id: int) -> None:
        """A replay of the batch recorded last finds every key of it stored.

        Raises:
            BatchIdReusedError: a key of ``rows`` is not in the table.
        """
        keys = rows.select(list(self.key_columns))
        held = contained(keys, stored_keys(table, keys, self.key_columns))
        if not all(held):
            raise BatchIdReusedError(
                f"{self.target} already recorded batch {batch_id} of app_id {self.app_id!r}, "
                f"and this batch {batch_id} brings {held.count(False)} key(s) it does not "
                "hold: a batch id names one set of records (is the app_id shared?)"
            )

