"""One Iceberg table a writer commits to: found in its catalog (or created), checked before a
write, and committed to in attempts that start over from the newest snapshot when another
writer committed first.

The append sink, the dead letters and the two-phase participant build on it; each commit they
make carries the snapshot properties of :mod:`kafka_share_eos.iceberg.snapshots`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING, Any, TypeVar

import pyarrow as pa

from kafka_share_eos._extras import ICEBERG
from kafka_share_eos._libs import iceberg_errors
from kafka_share_eos.errors import CommitConflictError, SinkConfigurationError, TargetTableError
from kafka_share_eos.iceberg.catalogs import IcebergCatalog
from kafka_share_eos.iceberg.tables import check_writable, create_table, load_table
from kafka_share_eos.sinks.columns import require_columns
from kafka_share_eos.sinks.sql_engine import database_errors

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog
    from pyiceberg.table import Table

T = TypeVar("T")


class IcebergTarget:
    """An Iceberg table named by its identifier in a catalog.

    Args:
        table: the identifier, with its namespace (``"db.events"``).
        catalog: a pyiceberg ``Catalog`` or its configuration (see
            :class:`~kafka_share_eos.iceberg.catalogs.IcebergCatalog`).
        create_table: create the table (and its namespace) from the first batch's schema
            when the catalog has none; without it a missing table is refused.
        what: names the writer in errors (``"IcebergAppendSink"``).
        max_commit_attempts: how often a commit is attempted when other writers commit first.
        retry_backoff_seconds: pause before the second attempt, doubled on each further one.

    Raises:
        MissingExtraError: pyiceberg is not installed.
        SinkConfigurationError: ``max_commit_attempts`` below 1, an identifier without a
            namespace, or a ``catalog`` of another kind.
    """

    def __init__(
        self,
        table: str,
        catalog: Catalog | Mapping[str, Any],
        *,
        create_table: bool,
        what: str,
        max_commit_attempts: int = 5,
        retry_backoff_seconds: float = 0.1,
    ) -> None:
        ICEBERG.require(what)
        if max_commit_attempts < 1:
            raise SinkConfigurationError(
                f"max_commit_attempts must be >= 1, got {max_commit_attempts}"
            )
        if "." not in table.strip("."):
            raise SinkConfigurationError(
                f"an Iceberg table is named with its namespace ('db.events'), got {table!r}"
            )
        self.catalog = IcebergCatalog(catalog)
        self.identifier = table
        self.create_table = create_table
        self.max_commit_attempts = max_commit_attempts
        self.retry_backoff_seconds = retry_backoff_seconds

    @property
    def target(self) -> str:
        """The table as ``iceberg:<catalog>.<table>``."""
        return f"iceberg:{self.catalog.name}.{self.identifier}"

    def check_target(self, columns: Sequence[str] = ()) -> None:
        """Check, before any record is read, that the table is there (or will be created),
        can take the writes, and has ``columns``.

        Raises:
            TargetTableError: the table is missing without ``create_table``, or is one the
                toolkit's writes cannot keep correct (equality deletes, format version above 2).
            MissingColumnsError: the table lacks one of ``columns``.
        """
        with self.catalog_errors("checking the table", before_any_record=True):
            table = self.load()
            if table is not None:
                self.check(table, columns)

    def load(self) -> Table | None:
        """The table at its current snapshot; None when it is missing and may be created.

        Raises:
            TargetTableError: the table is missing without ``create_table``.
        """
        table = load_table(self.catalog.catalog(), self.identifier)
        if table is None and not self.create_table:
            raise TargetTableError(
                f"{self.target} does not exist: create it, or pass create_table=True to create "
                "it from the first batch's schema"
            )
        return table

    def opened(self, schema: pa.Schema) -> Table:
        """The table at its current snapshot, created from ``schema`` when missing, checked to
        take rows of ``schema``."""
        table = self.load()
        if table is None:
            table = create_table(self.catalog.catalog(), self.identifier, schema)
        self.check(table, schema.names)
        return table

    def check(self, table: Table, columns: Sequence[str]) -> None:
        """Refuse a table the writes cannot keep correct, or one without ``columns``."""
        check_writable(table, self.target)
        require_columns(table.schema().as_arrow().empty_table(), list(dict.fromkeys(columns)),
                        f"Iceberg table {self.target}")

    @contextmanager
    def catalog_errors(self, operation: str, *, before_any_record: bool = False
                       ) -> Iterator[None]:
        """A SQL catalog's database that cannot be reached raises the toolkit's
        ``DatabaseUnreachableError`` (or ``DatabaseUnavailableError`` for a connection lost),
        naming the database without its password."""
        uri = self.catalog.properties.get("uri", "")
        sql = uri.startswith(("sqlite:", "postgresql:", "postgresql+"))
        with (database_errors(uri, f"{self.target}: {operation}",
                              before_any_record=before_any_record)
              if sql else nullcontext()):
            yield

    def committing(self, operation: str, attempt: Callable[[], T]) -> T:
        """``attempt()``'s answer; it is called again, after a pause, while another writer's
        commit lands first (pyiceberg's ``CommitFailedException``).

        Raises:
            CommitConflictError: other writers committed first on every attempt.
        """
        delay = self.retry_backoff_seconds
        for number in range(1, self.max_commit_attempts + 1):
            try:
                with self.catalog_errors(operation):
                    return attempt()
            except (iceberg_errors.CommitFailedException,
                    iceberg_errors.ValidationException) as error:
                if number == self.max_commit_attempts:
                    raise CommitConflictError(
                        f"{operation} could not be committed to {self.target}: other writers "
                        f"committed first on {number} attempts in a row; last error: {error}"
                    ) from error
                time.sleep(delay)
                delay *= 2
        raise AssertionError("unreachable")

    def close(self) -> None:
        """Drop the catalog built here (the next commit builds it again)."""
        self.catalog.forget()
