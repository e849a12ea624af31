"""A Delta append sink that applies each micro-batch at most once."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pyarrow as pa

from kafka_share_eos import faults
from kafka_share_eos._names import names
from kafka_share_eos.delta.handles import KeptTable
from kafka_share_eos.delta.transactions import append_once
from kafka_share_eos.delta.types import storable, table_schema
from kafka_share_eos.errors import MissingColumnsError
from kafka_share_eos.sinks.target_checks import check_delta_table

DEFAULT_SINK_APP_ID = "kafka-share-eos.delta-append"
QUERY_SINK_APP_ID_PREFIX = "kafka-share-eos/delta-append"


class DeltaAppendSink:
    """Appends each batch to a Delta table in one commit tagged ``(app_id, batch_id)``.

    This is the promise :class:`~kafka_share_eos.strategies.checkpoint_dedup.CheckpointDedupStore`
    needs from a sink: the append is atomic, and a second call for a batch id that already
    committed does nothing. A batch replayed after "sink written, ledger not" therefore leaves the
    table unchanged.

    Args:
        uri: Delta table location (local path or object-store URI delta-rs supports).
        app_id: application-transaction id; one per (query, table), so that queries and
            applications appending to one table never skip each other's batches. By default the
            streaming query's id once :meth:`bind_streaming_query` is called (the
            checkpoint-dedup store calls it; the id is stable across restarts from one
            checkpoint and new with a new one), ``"kafka-share-eos.delta-append"`` before.
        partition_by: partition columns used if this sink creates the table.
        columns: columns to write, in this order; all columns of the batch when None.
        storage_options: passed to delta-rs unchanged.

    Raises:
        MissingExtraError: deltalake is not installed.
    """

    def __init__(
        self,
        uri: str,
        *,
        app_id: str | None = None,
        partition_by: str | Sequence[str] | None = None,
        columns: str | Sequence[str] | None = None,
        storage_options: Mapping[str, str] | None = None,
    ) -> None:
        self.location = KeptTable(uri, storage_options)
        self.app_id = app_id or DEFAULT_SINK_APP_ID
        self._app_id_given = app_id is not None
        self.partition_by = names(partition_by) if partition_by else None
        self.columns = names(columns) if columns is not None else None

    def bind_streaming_query(self, query_id: str) -> None:
        """Record batch ids under the streaming query's id, unless an ``app_id`` was given."""
        if not self._app_id_given:
            self.app_id = f"{QUERY_SINK_APP_ID_PREFIX}:{query_id}"

    def __call__(self, table: pa.Table, batch_id: int) -> bool:
        """Append ``table`` as batch ``batch_id``; False when that batch was already appended.

        Raises:
            MissingColumnsError: the batch lacks one of ``columns``.
            ValueNotStorableError: a value does not fit its column in the table.
        """
        table = self._storable(table)
        faults.maybe_crash(faults.SINK_MID_WRITE)
        return append_once(
            self.location, table, app_id=self.app_id, batch_id=batch_id,
            partition_by=self.partition_by,
        )

    def check_target(self) -> None:
        """Check, before any record is read, that the location holds a Delta table or
        nothing yet (the first batch creates the table).

        Raises:
            TargetTableError: a file, or a directory of other files, is there.
        """
        check_delta_table(self.location)

    def check(self, table: pa.Table) -> None:
        """Raise what appending ``table`` would raise about its rows; writes nothing."""
        self._storable(table)

    def _storable(self, table: pa.Table) -> pa.Table:
        """The batch's columns in the types the table stores them in (a value that does not
        fit is refused here, in Arrow: delta-rs would panic on it)."""
        if self.columns is not None:
            missing = [c for c in self.columns if c not in table.column_names]
            if missing:
                raise MissingColumnsError(
                    f"the batch given to DeltaAppendSink({self.location.uri!r})",
                    missing, table.column_names,
                )
            table = table.select(self.columns)
        existing = self.location.snapshot()
        target = None if existing is None else table_schema(existing)
        return storable(table, target, where=f"Delta table {self.location.uri!r}")
