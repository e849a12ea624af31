"""The ledger of a Postgres participant: a table of the record keys its effect was applied for.

The key columns are the table's primary key, so the transaction that adds a key decides which
application applies its record. A batch claims its keys with one ``COPY``, which fails whole on a
known key, when they are all new; else with one ``INSERT ... SELECT FROM unnest(...)`` of the key
columns sent as arrays, with ``ON CONFLICT DO NOTHING RETURNING`` to learn which are new. A key
another transaction holds uncommitted makes the claim wait for that transaction's end.

The module imports without SQLAlchemy (see :mod:`kafka_share_eos._extras`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from kafka_share_eos._libs import psycopg, sa
from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.sinks import contained
from kafka_share_eos.sinks.sql import keys_held
from kafka_share_eos.sinks.sql_bulk import copy_rows
from kafka_share_eos.sinks.sql_engine import SqlDatabase, database_errors
from kafka_share_eos.sinks.sql_schema import sql_type
from kafka_share_eos.sinks.sql_values import postgres_array
from kafka_share_eos.twophase.protocol import Transaction

# Batches that claim keys with INSERT ... ON CONFLICT after a plain insert met a known key.
_DIRECT_COPY_BACKOFF = 8
# What a CREATE TABLE IF NOT EXISTS racing another one may raise: unique_violation on the
# catalog, duplicate_table.
_ALREADY_CREATED = frozenset({"23505", "42P07"})


def postgres_type(engine: sa.Engine, field: pa.Field) -> str:
    """The Postgres type of a column, as the upsert sinks map it."""
    return str(sql_type(field).compile(dialect=engine.dialect))


def _array_parameter(column: pa.ChunkedArray) -> str | list[Any]:
    """``column`` as a parameter cast to a PostgreSQL array: a literal Arrow builds, or a list
    the driver adapts for types without one."""
    try:
        return postgres_array(column)
    except ConfigurationError:
        return list(column.to_pylist())


class PostgresLedger:
    """The ledger table ``name`` in ``database``; it remembers when a ``COPY`` claim last failed.

    A copy sent to another process keeps what it learnt of the table.
    """

    def __init__(self, database: SqlDatabase, name: str) -> None:
        self._database = database
        self.name = name
        self._table = self._quote(name)
        self._ready = False
        # Ledgers created before 0.2 record each key's transaction id in a NOT NULL column.
        self._has_txid = False
        self._direct_copy_wait = 0

    @property
    def _engine(self) -> sa.Engine:
        return self._database.engine

    def _quote(self, identifier: str) -> str:
        return str(self._engine.dialect.identifier_preparer.quote(identifier))

    def _type(self, field: pa.Field) -> str:
        return postgres_type(self._engine, field)

    def create(self, schema: pa.Schema, keys: Sequence[str]) -> None:
        """Create the ledger for ``keys`` of ``schema`` unless it exists.

        Runs once per ledger object; several processes may run it at once.
        """
        if self._ready:
            return
        columns = ", ".join(
            f"{self._quote(c)} {self._type(schema.field(c))} NOT NULL" for c in keys
        )

        with self._engine.connect() as conn:
            try:
                conn.exec_driver_sql(
                    f"CREATE TABLE IF NOT EXISTS {self._table} ({columns},"
                    f" applied_at timestamptz NOT NULL DEFAULT now(),"
                    f" PRIMARY KEY ({', '.join(self._quote(c) for c in keys)}))"
                )
            except sa.exc.DBAPIError as error:
                # Another application sharing the ledger created it at the same moment.
                if getattr(error.orig, "sqlstate", None) not in _ALREADY_CREATED:
                    raise
            self._has_txid = bool(conn.exec_driver_sql(
                "SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = %(t)s::regclass"
                " AND attname = 'txid' AND NOT attisdropped)", {"t": self._table}
            ).scalar_one())
        self._ready = True

    def claim(self, conn: sa.Connection, rows: pa.Table, txn: Transaction) -> pa.Table:
        """Insert the keys of ``rows`` in the transaction open on ``conn``; the rows whose keys
        were not there yet."""
        if self._direct_copy_wait == 0:
            try:
                # Most batches hold only new keys: a COPY into the ledger is the cheapest claim
                # (a quarter less than an INSERT of the same keys as arrays), and the primary
                # key makes it fail as a whole otherwise.
                with conn.begin_nested():
                    self._copy_keys(conn, rows, txn)
                return rows
            except sa.exc.IntegrityError as error:
                if not isinstance(error.orig, psycopg.errors.UniqueViolation):
                    raise
                self._direct_copy_wait = _DIRECT_COPY_BACKOFF
        else:
            self._direct_copy_wait -= 1
        return self._insert_new_keys(conn, rows, txn)

    def _copy_keys(self, conn: sa.Connection, rows: pa.Table, txn: Transaction) -> None:
        """COPY the keys of ``rows`` into the ledger; a key already there fails it."""
        keys = rows.select(list(txn.key_columns))
        if self._has_txid:
            keys = keys.append_column(
                "txid", pa.repeat(pa.scalar(txn.txid, pa.string()), rows.num_rows)
            )
        copy_rows(conn, None, self.name, keys)

    def _insert_new_keys(self, conn: sa.Connection, rows: pa.Table, txn: Transaction) -> pa.Table:
        """Insert the keys of ``rows`` the ledger does not hold, sent as one array per key
        column; the rows whose keys were inserted."""
        keys = txn.key_columns
        arrays = ", ".join(
            f"CAST(:k{i} AS {self._type(rows.schema.field(c))}[])" for i, c in enumerate(keys)
        )
        columns = ", ".join(self._quote(c) for c in keys)
        params: dict[str, Any] = {
            f"k{i}": _array_parameter(rows.column(c)) for i, c in enumerate(keys)
        }
        target, values = columns, "*"
        if self._has_txid:
            params["txid"] = txn.txid
            target, values = f"{columns}, txid", "*, :txid"
        inserted = conn.execute(
            sa.text(
                f"INSERT INTO {self._table} ({target}) SELECT {values}"
                f" FROM unnest({arrays}) ON CONFLICT DO NOTHING RETURNING {columns}"
            ),
            params,
        ).all()
        claimed = pa.table(
            [pa.array([row[i] for row in inserted]) for i in range(len(keys))], names=list(keys)
        )
        return rows.filter(pa.array(contained(rows.select(list(keys)), claimed), pa.bool_()))

    def applied(self, keys: pa.Table) -> list[bool]:
        """For each row of ``keys`` (the key columns), whether a committed transaction holds it."""
        with database_errors(self._database.url, f"lookup of applied keys in {self.name!r}"), \
                self._engine.connect() as conn:
            return keys_held(conn, self.name, keys)

    def names_txid(self, conn: sa.Connection, txid: str) -> bool:
        """Whether a key of transaction ``txid`` is in the ledger (of a ledger created before
        0.2, which records each key's transaction)."""
        return bool(conn.execute(
            sa.text(f"SELECT EXISTS (SELECT 1 FROM {self._table} WHERE txid = :t)"),
            {"t": txid},
        ).scalar_one())
