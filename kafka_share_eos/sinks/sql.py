"""Idempotent upserts into SQL tables (PostgreSQL, SQLite) through SQLAlchemy.

Each batch is one transaction. Rows go in through the dialect's own
``INSERT ... ON CONFLICT (key columns)`` construct: ``DO NOTHING`` when there is no version
column (a record's content never changes between deliveries), otherwise ``DO UPDATE ... WHERE
excluded.version > table.version`` so an older redelivery never overwrites a newer row. The
database reports which rows it changed; the rest of the batch were already applied.

On PostgreSQL, batches of at least ``bulk_threshold`` rows take the bulk path
(:mod:`~kafka_share_eos.sinks.sql_bulk`): one read finds which identities the table holds, and
only the rest is loaded, with ``COPY``.

Identifiers are quoted by SQLAlchemy (and by psycopg for the ``COPY`` statement); values are
always bound parameters or ``COPY`` data, so record contents cannot change the SQL.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pyarrow as pa

from kafka_share_eos import faults
from kafka_share_eos._libs import sa, sa_postgresql, sa_sqlite
from kafka_share_eos._process_local import ProcessLocal, nothing
from kafka_share_eos.errors import MissingColumnsError, SinkConfigurationError, TargetTableError
from kafka_share_eos.sinks.columns import require_columns
from kafka_share_eos.sinks.dedup import contained
from kafka_share_eos.sinks.outcome import UpsertOutcome
from kafka_share_eos.sinks.sql_bulk import CopyUpsert
from kafka_share_eos.sinks.sql_engine import SqlDatabase, database_errors
from kafka_share_eos.sinks.sql_schema import open_target
from kafka_share_eos.sinks.sql_values import python_rows as python_rows
from kafka_share_eos.sinks.target_checks import check_sql_table

_DIALECTS = ("postgresql", "sqlite")


def _newer(incoming: Any, stored: Any, dialect: str) -> Any:
    """A real ``incoming`` version replaces a strictly lower ``stored`` one and a null (or, in
    PostgreSQL, NaN) one; a null or NaN ``incoming`` version replaces nothing. SQLite stores NaN
    as null."""
    real = sa.and_(incoming.is_not(None))
    replaceable = sa.or_(stored.is_(None), incoming > stored)
    if dialect == "postgresql" and isinstance(stored.type, sa.Float | sa.Numeric):
        # PostgreSQL orders NaN above every number.
        nan = sa.literal(float("nan"), stored.type)
        real = sa.and_(real, incoming != nan)
        replaceable = sa.or_(replaceable, stored == nan)
    return sa.and_(real, replaceable)


def _insert(dialect: str) -> Callable[[sa.Table], Any]:
    """The dialect's ``INSERT`` construct, which has its own ``ON CONFLICT``."""
    return sa_postgresql.insert if dialect == "postgresql" else sa_sqlite.insert
# Rows per executemany call: bounds memory for the parameter dictionaries.
_ROWS_PER_EXECUTE = 10_000
# Keys per lookup statement: three bound parameters each stay under SQLite's oldest limit (999).
_KEYS_PER_LOOKUP = 300


def _chunks(rows: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


def keys_held(
    conn: sa.Connection, table: str, keys: pa.Table, db_schema: str | None = None
) -> list[bool]:
    """For each row of ``keys``, whether ``table`` (absent: holds nothing) has a row with the
    same values in the columns ``keys`` names."""
    if not sa.inspect(conn).has_table(table, schema=db_schema):
        return [False] * keys.num_rows
    target = sa.Table(table, sa.MetaData(), schema=db_schema, autoload_with=conn)
    columns = [target.c[name] for name in keys.column_names]
    found = [
        row._asdict()
        for chunk in _chunks(list(python_rows(keys)), _KEYS_PER_LOOKUP)
        for row in conn.execute(sa.select(*columns).where(sa.tuple_(*columns).in_(chunk)))
    ]
    # Typed by what the database returned (NUMERIC comes back as Decimal): contained casts.
    return contained(keys, pa.Table.from_pylist(found))


class SqlUpsertWriter(ProcessLocal):
    """Idempotent writer into one SQL table; rows of a batch must be unique on the key columns.

    Args:
        engine: a SQLAlchemy :class:`~sqlalchemy.engine.Engine` or URL
            (``postgresql+psycopg://...``, ``sqlite:///path.db``).
        table: the target table's name (any characters; it is quoted).
        key_columns: columns that identify a row; the table needs a unique key on exactly these.
        version_column: when given, a row replaces the stored one only if its version is higher.
        db_schema: the database schema (namespace) holding the table.
        create_table: create the table from the first batch's Arrow schema when it is missing.
        bulk_threshold: on PostgreSQL, batches with at least this many rows use COPY.

    The writer pickles without its engine and its reflected table (a copy reconnects from the
    URL and reflects the table again), so Spark executors, and a Spark Connect server running a
    strategy, can use a copy of it.
    """

    _PROCESS_LOCAL = ProcessLocal.attributes(_table=nothing)

    def __init__(
        self,
        engine: sa.Engine | str,
        table: str,
        *,
        key_columns: Sequence[str],
        version_column: str | None = None,
        db_schema: str | None = None,
        create_table: bool = False,
        bulk_threshold: int = 100,
    ) -> None:
        if bulk_threshold < 1:
            raise SinkConfigurationError(f"bulk_threshold must be >= 1, got {bulk_threshold}")
        # Copies run inside short-lived Spark tasks: they keep no idle connections.
        self._database = SqlDatabase(engine, pool_in_copies=False)
        self.dialect = self._database.dialect
        if self.dialect not in _DIALECTS:
            raise SinkConfigurationError(
                f"SQL dialect {self.dialect!r} of the sink URL is not supported; "
                f"use one of {sorted(_DIALECTS)}"
            )
        self.table_name = table
        self.key_columns = tuple(key_columns)
        self.version_column = version_column
        self.db_schema = db_schema
        self.create_table = create_table
        self.bulk_threshold = bulk_threshold
        self._table: sa.Table | None = None
        self._copy_upsert = CopyUpsert(self.key_columns, version_column, self._on_conflict)

    @property
    def target(self) -> str:
        """The table as ``dialect:schema.table``."""
        qualified = f"{self.db_schema}.{self.table_name}" if self.db_schema else self.table_name
        return f"{self.dialect}:{qualified}"

    @property
    def supports_bulk(self) -> bool:
        """Whether large batches can take the COPY path (PostgreSQL only)."""
        return self.dialect == "postgresql"

    @property
    def engine(self) -> sa.Engine:
        """The engine, created from the URL on first use (also in a pickled copy)."""
        return self._database.engine

    def check_target(self) -> None:
        """Check, before any record is read, that the database answers and that the table
        exists with a unique key on the key columns (or will be created, ``create_table``).

        Raises:
            DatabaseUnreachableError: no connection to the database could be opened.
            TargetTableError: the table (or SQLite file) is missing without ``create_table``,
                or has no unique key on exactly the key columns.
        """
        check_sql_table(self._database, self.table_name, self.key_columns,
                        db_schema=self.db_schema, create=self.create_table)

    def prepare(self, schema: pa.Schema) -> None:
        """Reflect or create the table and check its unique key and columns against ``schema``."""
        with database_errors(self._database.url, f"opening table {self.target!r}"), \
                self.engine.begin() as conn:
            self._table = open_target(
                conn,
                self.table_name,
                schema,
                self.key_columns,
                db_schema=self.db_schema,
                create=self.create_table,
            )

    def upsert(self, table: pa.Table, batch_id: int) -> UpsertOutcome:
        """Apply ``table`` in one transaction; ``batch_id`` only appears in errors.

        Raises:
            DatabaseUnavailableError: the database could not be reached or the connection was
                lost, perhaps during the COMMIT: a restart applies the batch exactly once, as
                rows already applied are found and not written again.
        """
        if table.num_rows == 0:
            return UpsertOutcome(0, 0, "rows")
        require_columns(table, [*self.key_columns, *filter(None, [self.version_column])],
                        f"batch {batch_id} for table {self.target!r}")
        with database_errors(self._database.url,
                             f"upsert of batch {batch_id} into {self.target!r}"):
            return self._upsert(table, batch_id)

    def _upsert(self, table: pa.Table, batch_id: int) -> UpsertOutcome:
        if self._table is None:
            self.prepare(table.schema)
        assert self._table is not None
        # Checked on every batch: a column the first batch lacked is refused as it would have
        # been then, not turned into a statement the database refuses row by row.
        extra = [name for name in table.column_names if name not in self._table.c]
        if extra:
            raise MissingColumnsError(f"table {self.target!r}", extra, self._table.c.keys())
        use_copy = self.supports_bulk and table.num_rows >= self.bulk_threshold
        try:
            with self.engine.begin() as conn:
                if use_copy:
                    written, path = self._copy_upsert(conn, self._table, table), "copy"
                else:
                    written, path = self._row_upsert(conn, self._table, table), "rows"
                faults.maybe_crash(faults.SINK_MID_WRITE)
        except sa.exc.IntegrityError as error:
            raise TargetTableError(
                f"batch {batch_id} violates a constraint of table {self.target!r} other than the "
                f"key {list(self.key_columns)}: {error.orig}"
            ) from error
        return UpsertOutcome(written, table.num_rows - written, path)

    def check(self, table: pa.Table) -> None:
        """Upsert ``table`` in a transaction that is rolled back: raises what a real write of
        these rows would (constraint, type and range errors), changes nothing."""
        with self.checks() as check:
            check(table)

    def checks(self) -> RowChecks:
        """:meth:`check` for the parts of one batch, each checked after the parts before it
        (see :class:`RowChecks`)."""
        return RowChecks(self)

    def applied(self, keys: pa.Table) -> list[bool]:
        """For each row of ``keys``, whether the table holds its key; reads, never writes."""
        with database_errors(self._database.url, f"lookup of applied keys in {self.target!r}"), \
                self.engine.connect() as conn:
            return keys_held(
                conn, self.table_name, keys.select(list(self.key_columns)), self.db_schema
            )

    def close(self) -> None:
        """Release pooled connections of an engine this writer created."""
        self._database.dispose()

    def _on_conflict(self, target: sa.Table, statement: Any, columns: Sequence[str]) -> Any:
        keys = [target.c[k] for k in self.key_columns]
        excluded = statement.excluded
        updates = {c: excluded[c] for c in columns if c not in self.key_columns}
        if self.version_column is None or not updates:
            return statement.on_conflict_do_nothing(index_elements=keys)
        version = self.version_column
        return statement.on_conflict_do_update(
            index_elements=keys, set_=updates,
            where=_newer(excluded[version], target.c[version], self.dialect),
        )

    def _row_upsert(self, conn: sa.Connection, target: sa.Table, table: pa.Table) -> int:
        names = table.column_names
        statement = self._on_conflict(target, _insert(self.dialect)(target), names)
        rows = [dict(zip(names, values, strict=True)) for values in python_rows(table)]
        # Only inserted or updated rows come back; batched executemany has no reliable rowcount.
        returning = statement.returning(target.c[self.key_columns[0]])
        return sum(
            len(conn.execute(returning, chunk).all()) for chunk in _chunks(rows, _ROWS_PER_EXECUTE)
        )


class RowChecks:
    """Checks of the parts of one batch, in one transaction that :meth:`close` rolls back.

    Each part is upserted under a savepoint, kept when the part passes, so a part meets the
    parts before it as in the batch's own write: a row that conflicts with an earlier row of its
    batch on a unique key other than the identity fails on its own. Bisection gives the parts
    in row order, so the first of two such rows is kept and the later one is refused.
    """

    def __init__(self, writer: SqlUpsertWriter) -> None:
        self._writer = writer
        self._conn: sa.Connection | None = None

    def __call__(self, part: pa.Table) -> None:
        """Raise what writing ``part`` after the parts checked before would raise."""
        writer = self._writer
        if writer._table is None:
            writer.prepare(part.schema)
        assert writer._table is not None
        if self._conn is None:
            self._conn = writer.engine.connect()
            self._conn.begin()
            driver = self._conn.connection.driver_connection
            if writer.dialect == "sqlite" and not getattr(driver, "in_transaction", True):
                # pysqlite begins a transaction only before DML: a SAVEPOINT first would begin
                # one of its own, which its RELEASE would commit.
                self._conn.exec_driver_sql("BEGIN")
        with self._conn.begin_nested():
            writer._row_upsert(self._conn, writer._table, part)

    def close(self) -> None:
        """Roll back every part checked and release the connection."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> RowChecks:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

