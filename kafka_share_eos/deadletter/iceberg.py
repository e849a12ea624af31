"""Dead letters in an Iceberg table, one row per record."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from kafka_share_eos.deadletter.letters import DEAD_LETTER_SCHEMA, first_per_record
from kafka_share_eos.deadletter.sink import DeadLetterSink
from kafka_share_eos.iceberg.snapshots import commit_marked, commit_record
from kafka_share_eos.iceberg.tables import without_rebase
from kafka_share_eos.sinks.dedup import contained
from kafka_share_eos.sinks.iceberg_keys import stored_keys
from kafka_share_eos.sinks.iceberg_target import IcebergTarget

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog

APP_ID = "kafka-share-eos/dead-letters"
"""The application the dead letters' snapshots are recorded under."""

_KEY = ("letter_id",)


class IcebergDeadLetters(DeadLetterSink):
    """Dead letters in an Iceberg table, with the columns of every dead-letter sink.

    A write reads which of its ``letter_id`` values the table holds (only the files whose
    statistics can match) and appends the others in one snapshot, committed only onto the
    snapshot it read: when another writer committed first it reads again, so a replayed batch,
    or two pipelines writing one record's letter, add it once. The snapshot carries the
    toolkit's properties under the application ``kafka-share-eos/dead-letters``, with every
    application's watermark carried forward. Strategies write letters in the Spark driver.

    Args:
        table: the table's identifier in the catalog (``"db.dead_letters"``).
        catalog: a pyiceberg ``Catalog`` or its configuration dict (see
            :class:`~kafka_share_eos.iceberg.catalogs.IcebergCatalog`).
        create_table: create the table (and its namespace) with the first letters when the
            catalog has none; without it a missing table is refused.

    Raises:
        MissingExtraError: pyiceberg is not installed.
        SinkConfigurationError: an identifier without a namespace, or a ``catalog`` of another
            kind.
    """

    def __init__(self, table: str, *, catalog: Catalog | Mapping[str, Any],
                 create_table: bool = True) -> None:
        self.table = IcebergTarget(table, catalog, create_table=create_table,
                                   what="IcebergDeadLetters")

    @property
    def target(self) -> str:
        return self.table.target

    def check_target(self) -> None:
        """Check, before any record is read, that the table is there (or will be created)
        and has the dead letters' columns.

        Raises:
            TargetTableError: the table is missing without ``create_table``, or cannot be
                written.
            MissingColumnsError: the table lacks a dead-letter column.
        """
        self.table.check_target(DEAD_LETTER_SCHEMA.names)

    def write(self, letters: pa.Table) -> int:
        """Append the letters whose ``letter_id`` the table does not hold; return how many.

        Raises:
            CommitConflictError: other writers committed first on every attempt.
        """
        letters = first_per_record(letters.cast(DEAD_LETTER_SCHEMA))
        if letters.num_rows == 0:
            return 0
        return self.table.committing("writing dead letters", lambda: self._append(letters))

    def read(self) -> pa.Table:
        table = self.table.load()
        if table is None:
            return DEAD_LETTER_SCHEMA.empty_table()
        rows = table.scan(selected_fields=tuple(DEAD_LETTER_SCHEMA.names)).to_arrow()
        rows = rows.select(DEAD_LETTER_SCHEMA.names).cast(DEAD_LETTER_SCHEMA)
        return rows.sort_by([("dead_lettered_at", "ascending"), ("letter_id", "ascending")])

    def close(self) -> None:
        self.table.close()

    def _append(self, letters: pa.Table) -> int:
        table = self.table.opened(DEAD_LETTER_SCHEMA)
        keys = letters.select(list(_KEY))
        held = contained(keys, stored_keys(table, keys, _KEY))
        new = letters.filter(pa.array([not h for h in held]))
        if new.num_rows == 0:
            return 0
        batch = int(pc.max(new.column("batch_id")).as_py())
        properties = commit_record(table).properties(APP_ID, batch, None)
        transaction = without_rebase(table).transaction()
        # The table's own Arrow schema: its string columns are large ones, and its required
        # columns must stay required for pyiceberg to take them.
        transaction.append(new.cast(table.schema().as_arrow()), snapshot_properties=properties)
        commit_marked(transaction)
        return int(new.num_rows)
