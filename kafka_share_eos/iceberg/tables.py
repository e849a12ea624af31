"""The Iceberg tables a writer opens, creates and refuses, and the commits it makes on them.

pyiceberg writes copy-on-write only: it cannot apply equality deletes (Flink's and Spark's
merge-on-read upserts write them), nor write a table of a format version above the one it
supports. Such a table is refused before any write, rather than given rows a reader would see
beside rows it never deleted.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from kafka_share_eos._libs import iceberg_errors, iceberg_table
from kafka_share_eos.errors import SinkConfigurationError, TargetTableError

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog
    from pyiceberg.table import Table

# pyiceberg's own key: how often it rebases a failed commit onto the newer snapshot.
_COMMIT_RETRIES = "commit.retry.num-retries"
# The format version pyiceberg writes every feature of.
_WRITABLE_FORMAT_VERSION = 2


def load_table(catalog: Catalog, identifier: str) -> Table | None:
    """The table, with its current metadata; None when the catalog has no such table."""
    try:
        return catalog.load_table(identifier)
    except (iceberg_errors.NoSuchTableError, iceberg_errors.NoSuchNamespaceError):
        return None


def create_table(catalog: Catalog, identifier: str, schema: pa.Schema) -> Table:
    """The table, created with ``schema`` (and its namespace) unless another writer did first."""
    namespace = identifier.rpartition(".")[0]
    if namespace:
        try:
            catalog.create_namespace_if_not_exists(namespace)
        except Exception:
            # Another writer created it between the catalog's check and its insert: pyiceberg's
            # SQL catalog then raises its database's integrity error.
            if not catalog.namespace_exists(namespace):
                raise
    return catalog.create_table_if_not_exists(identifier, schema=schema)


def check_writable(table: Table, where: str) -> None:
    """Refuse a table the toolkit's copy-on-write commits cannot keep correct.

    Raises:
        TargetTableError: the table's format version is above 2, or its current snapshot has
            equality delete files.
    """
    version = table.metadata.format_version
    if version > _WRITABLE_FORMAT_VERSION:
        raise TargetTableError(
            f"{where} is an Iceberg table of format version {version}; the upsert writes "
            f"format version {_WRITABLE_FORMAT_VERSION} tables only (pyiceberg cannot write "
            "every feature of later ones)"
        )
    snapshot = table.current_snapshot()
    summary = None if snapshot is None else snapshot.summary
    equality = 0 if summary is None else int(summary["total-equality-deletes"] or 0)
    if equality:
        raise TargetTableError(
            f"{where} holds {equality} equality delete(s) (a merge-on-read upsert by another "
            "engine wrote them), which pyiceberg's copy-on-write writes cannot apply: compact "
            "the table (Spark's rewrite_data_files with delete-file-threshold=1) first"
        )


def as_table_types(rows: pa.Table, table: Table, where: str) -> pa.Table:
    """``rows`` with each column cast to the table's type for it (an ``int`` column of Spark's
    into a ``long`` one, or back while the values fit), as pyiceberg writes only exact types.

    Raises:
        SinkConfigurationError: a column cannot be cast (a string into a number, a value out
            of range); the message names the column and both types.
        TargetTableError: the table requires a column the batch lacks (one another writer
            added as required); the message names the table and the columns.
    """
    required = [field.name for field in table.schema().fields
                if field.required and field.name not in rows.column_names]
    if required:
        raise TargetTableError(
            f"{where} requires column(s) {required}, which the batch lacks: a row without "
            "them cannot be stored. Add them in the strategy's transform, or make them "
            "optional in the table"
        )
    stored = table.schema().as_arrow()
    for index, name in enumerate(rows.column_names):
        wanted = stored.field(name)
        column = rows.column(index)
        # pyiceberg takes a required column only from a field that says so; Spark's say
        # nullable whatever they hold.
        nullable = wanted.nullable or column.null_count > 0
        if column.type == wanted.type and rows.field(index).nullable == nullable:
            continue
        try:
            cast = column.cast(wanted.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
            raise SinkConfigurationError(
                f"column {name!r} of the batch is {column.type}, and {where} stores "
                f"{wanted.type}: {error}. Cast it in the strategy's transform"
            ) from error
        rows = rows.set_column(index, wanted.with_nullable(nullable), cast)
    return rows


def without_rebase(table: Table) -> Table:
    """The table as a transaction sees it, with pyiceberg's rebase-and-retry of commits off.

    pyiceberg retries a failed commit on the newer snapshot. A writer that decided from this
    snapshot which keys are absent would then append keys another writer just added, and its
    snapshot would carry watermarks older than the newest ones. The commit fails instead and
    the writer decides again from the new snapshot. The setting lives in this copy's
    metadata only: a commit sends its own changes, never the table's properties.
    """
    properties = {**table.metadata.properties, _COMMIT_RETRIES: "0"}
    metadata = table.metadata.model_copy(update={"properties": properties})
    return iceberg_table.Table(
        table.name(), metadata, table.metadata_location, table.io, table.catalog
    )
