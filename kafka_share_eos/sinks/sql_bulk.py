"""The PostgreSQL bulk path of the SQL upsert sink: ask which identities are stored, COPY the rest.

A batch costs what its ``COPY`` costs; everything else has to stay small next to it:

1. One read asks the target which of the batch's keys it holds. The keys are covered by ranges
   (:mod:`~kafka_share_eos.sinks.key_ranges`), and the index of the table's unique key answers
   with the stored keys in those ranges only (nothing at all for a batch of new records), with
   their versions when there is a version column.
2. Rows whose key is absent are copied straight into the target, inside a savepoint. If another
   writer committed one of those identities after the read, the unique key makes that ``COPY``
   fail whole, and its rows take step 3, whose ``ON CONFLICT`` waits for and absorbs it.
3. Rows that replace a stored row (a strictly higher version), and the rows of a failed direct
   ``COPY``, are copied into a temporary table dropped at commit and moved with one
   ``INSERT ... SELECT``: without a version column an insert of the rows whose identity is absent
   (cheaper than ``ON CONFLICT``'s speculative insertion), falling back to ``ON CONFLICT DO
   NOTHING`` if a concurrent writer got there first; with one ``ON CONFLICT DO UPDATE ... WHERE``
   newer.

Rows already applied are never sent, so a redelivered batch costs one read. Keys that are not
range-shaped (no integer last key column, or values spread too thin) skip the read: the whole
batch is copied straight into the target while batches hold only new identities, and through the
temporary table (step 3) for a while after one did not.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeAlias

import pyarrow as pa

from kafka_share_eos._libs import psycopg, sa, sa_postgresql
from kafka_share_eos.sinks.dedup import StoredSplit, split_by_stored
from kafka_share_eos.sinks.key_ranges import KeyRange, key_ranges, range_column
from kafka_share_eos.sinks.sql_values import python_rows

STAGE_TABLE = "kafka_share_eos_upsert_stage"
# Batches of keys that are not range-shaped written through the stage table after a direct COPY
# met an existing key.
_DIRECT_COPY_BACKOFF = 8

OnConflict: TypeAlias = "Callable[[sa.Table, Any, Sequence[str]], Any]"
"""Adds the writer's ``ON CONFLICT`` clause to an insert of the given columns."""


def copy_rows(conn: sa.Connection, db_schema: str | None, name: str, rows: pa.Table) -> None:
    """``COPY`` ``rows`` into the same-named columns of ``db_schema.name`` in the open transaction.

    psycopg's errors surface as SQLAlchemy's (``IntegrityError``, ``DataError``,
    ``OperationalError``...), like those of every other statement.
    """
    identifier = psycopg.sql.Identifier
    qualified = identifier(db_schema, name) if db_schema else identifier(name)
    statement = psycopg.sql.SQL("COPY {} ({}) FROM STDIN").format(
        qualified, psycopg.sql.SQL(", ").join(map(psycopg.sql.Identifier, rows.column_names))
    )
    raw = conn.connection.driver_connection
    assert raw is not None
    try:
        with raw.cursor() as cursor, cursor.copy(statement) as copy:
            for row in python_rows(rows, for_copy=True):
                copy.write_row(row)
    except psycopg.Error as error:
        raise sa.exc.DBAPIError.instance(
            statement.as_string(raw), None, error, psycopg.Error, dialect=conn.dialect
        ) from error


def _rowcount(conn: sa.Connection, statement: Any) -> int:
    """Execute ``statement`` and return how many rows it inserted or updated."""
    return int(conn.execute(statement.execution_options(preserve_rowcount=True)).rowcount)


def _is_unique_violation(error: sa.exc.IntegrityError) -> bool:
    return isinstance(error.orig, psycopg.errors.UniqueViolation)


class CopyUpsert:
    """The bulk path of one writer (it remembers when direct copies last failed).

    Args:
        key_columns: the target's unique key, in its index order.
        version_column: when given, a row replaces the stored one only if its version is higher.
        on_conflict: the writer's ``ON CONFLICT`` clause for an insert of some columns.
    """

    def __init__(
        self, key_columns: Sequence[str], version_column: str | None, on_conflict: OnConflict
    ) -> None:
        self.key_columns = tuple(key_columns)
        self.version_column = version_column
        self._on_conflict = on_conflict
        self._direct_copy_wait = 0

    def __call__(self, conn: sa.Connection, target: sa.Table, table: pa.Table) -> int:
        """Write ``table`` (unique on the key columns) in the open transaction; rows written."""
        split = self._split(conn, target, table)
        if split is None:
            if self._direct_copy_wait == 0:
                if self._copy_direct(conn, target, table):
                    return int(table.num_rows)
                self._direct_copy_wait = _DIRECT_COPY_BACKOFF
            else:
                self._direct_copy_wait -= 1
            return self._copy_staged(conn, target, table)
        written, staged = 0, split.newer
        if split.absent.num_rows:
            if self._copy_direct(conn, target, split.absent):
                written = int(split.absent.num_rows)
            else:
                staged = pa.concat_tables([split.absent, split.newer])
        if staged.num_rows:
            written += self._copy_staged(conn, target, staged)
        return written

    def _copy_direct(self, conn: sa.Connection, target: sa.Table, rows: pa.Table) -> bool:
        """COPY ``rows`` into the target; False (and nothing written) if a key was there."""
        try:
            # A savepoint makes a failed COPY cost nothing but the time it ran.
            with conn.begin_nested():
                copy_rows(conn, target.schema, target.name, rows)
            return True
        except sa.exc.IntegrityError as error:
            if not _is_unique_violation(error):
                raise
            return False

    def _copy_staged(self, conn: sa.Connection, target: sa.Table, rows: pa.Table) -> int:
        names = rows.column_names
        stage = sa.Table(
            STAGE_TABLE,
            sa.MetaData(),
            *(sa.Column(name, target.c[name].type) for name in names),
            prefixes=["TEMPORARY"],
            postgresql_on_commit="DROP",
        )
        stage.create(conn)
        copy_rows(conn, None, STAGE_TABLE, rows)
        columns = [target.c[name] for name in names]
        if self.version_column is None:
            existing = target.alias("existing")
            absent = sa.select(*stage.c).where(
                ~sa.exists().where(*(existing.c[k] == stage.c[k] for k in self.key_columns))
            )
            try:
                with conn.begin_nested():
                    insert = sa_postgresql.insert(target).from_select(columns, absent)
                    return _rowcount(conn, insert)
            except sa.exc.IntegrityError as error:
                if not _is_unique_violation(error):
                    raise
        insert = sa_postgresql.insert(target).from_select(columns, sa.select(*stage.c))
        return _rowcount(conn, self._on_conflict(target, insert, names))

    def _split(self, conn: sa.Connection, target: sa.Table, table: pa.Table) -> StoredSplit | None:
        """The rows the target lacks or holds at a lower version; None when the keys are not
        range-shaped (or the stored values do not convert), so the batch is not looked up."""
        keys = table.select(list(self.key_columns))
        column = range_column(keys.schema)
        ranges = None if column is None else key_ranges(keys, column)
        if column is None or ranges is None:
            return None
        wanted = [*self.key_columns, *([self.version_column] if self.version_column else [])]
        try:
            stored = _stored_rows(conn, target, ranges, column, table.select(wanted).schema)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError):
            return None
        return split_by_stored(table, stored, self.key_columns, self.version_column)


def _stored_rows(
    conn: sa.Connection, target: sa.Table, ranges: list[KeyRange], column: str, schema: pa.Schema
) -> pa.Table:
    """The target's values of ``schema``'s columns (the key columns first, in index order,
    then perhaps the version) for its keys within ``ranges``."""
    keys = schema.names[: schema.names.index(column) + 1]
    fixed = [name for name in keys if name != column]
    term = psycopg.sql.SQL(" AND ").join(
        [
            *(psycopg.sql.SQL("{} = %s").format(psycopg.sql.Identifier(name)) for name in fixed),
            psycopg.sql.SQL("{} BETWEEN %s AND %s").format(psycopg.sql.Identifier(column)),
        ]
    )
    qualified = (
        psycopg.sql.Identifier(target.schema, target.name)
        if target.schema
        else psycopg.sql.Identifier(target.name)
    )
    query = psycopg.sql.SQL("SELECT {} FROM {} WHERE {}").format(
        psycopg.sql.SQL(", ").join(map(psycopg.sql.Identifier, schema.names)),
        qualified,
        psycopg.sql.SQL(" OR ").join([psycopg.sql.SQL("({})").format(term)] * len(ranges)),
    )
    params = [value for r in ranges for value in (*r.fixed, r.low, r.high)]
    raw = conn.connection.driver_connection
    assert raw is not None
    with raw.cursor() as cursor:
        cursor.execute(query, params)
        rows = cursor.fetchall()
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(schema)
    return pa.table(
        [pa.array(values, field.type) for values, field in zip(columns, schema, strict=True)],
        schema=schema,
    )
