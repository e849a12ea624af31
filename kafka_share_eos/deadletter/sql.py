"""Dead letters in a PostgreSQL or SQLite table, one row per record."""

from __future__ import annotations

import datetime as dt
import os
from typing import Any

import pyarrow as pa

from kafka_share_eos._extras import require_sql
from kafka_share_eos._libs import sa, sa_postgresql, sa_sqlite
from kafka_share_eos.deadletter.letters import DEAD_LETTER_SCHEMA
from kafka_share_eos.deadletter.sink import DeadLetterSink
from kafka_share_eos.errors import ConfigurationError, LocationNotFoundError
from kafka_share_eos.sinks import database_errors
from kafka_share_eos.sinks.sql_engine import SqlDatabase
from kafka_share_eos.sinks.target_checks import check_sql_database

DEFAULT_TABLE = "kafka_share_dead_letters"


class SqlDeadLetters(DeadLetterSink):
    """Dead letters in table ``table`` (created when missing) of a SQLAlchemy database.

    The primary key is ``letter_id``; a repeated letter is ignored (``ON CONFLICT DO NOTHING``).

    Args:
        engine: an Engine or URL (``postgresql+psycopg://...``, ``sqlite:///...``).
        table: the table name.
        db_schema: the database schema holding it (PostgreSQL).
        create_table: create the table when missing; without, a missing table (or SQLite
            database file) is refused and nothing is created, as inspecting needs.

    Raises:
        MissingExtraError: SQLAlchemy is not installed (or psycopg, for a PostgreSQL URL).
        ConfigurationError: the database is neither PostgreSQL nor SQLite.
        LocationNotFoundError: ``create_table`` is False and the table (or the SQLite file)
            does not exist.
    """

    def __init__(
        self,
        engine: sa.Engine | str,
        table: str = DEFAULT_TABLE,
        *,
        db_schema: str | None = None,
        create_table: bool = True,
    ) -> None:
        require_sql(engine, "SqlDeadLetters")

        # A copy in another process (a Spark Connect server's) connects from the URL.
        self._database = SqlDatabase(engine)
        dialect = self._database.dialect
        if dialect not in ("postgresql", "sqlite"):
            raise ConfigurationError(
                f"dead letters need a PostgreSQL or SQLite database, not {dialect!r}"
            )
        self.table = _table_for(table, db_schema)
        with database_errors(self._database.url, f"opening dead letters {self.target!r}",
                             before_any_record=True):
            if create_table:
                self.table.metadata.create_all(self.engine, checkfirst=True)
            else:
                self._require_table()

    def check_target(self) -> None:
        """Connect to the database, before any record is read (the constructor made or found
        the table).

        Raises:
            DatabaseUnreachableError: no connection to the database could be opened.
        """
        check_sql_database(self._database, f"dead letters {self.target!r}")

    @property
    def engine(self) -> sa.Engine:
        """The database's engine (created from the URL on first use, also in a copy)."""
        return self._database.engine

    @property
    def target(self) -> str:
        return f"{self._database.dialect}:{self.table.fullname}"

    def write(self, letters: pa.Table) -> int:
        if letters.num_rows == 0:
            return 0

        dialect = sa_postgresql if self._database.dialect == "postgresql" else sa_sqlite
        statement = dialect.insert(self.table).on_conflict_do_nothing(index_elements=["letter_id"])
        # A letter's id makes its second write a no-op: a batch failed by a lost connection
        # (its COMMIT in doubt) writes its letters again at the restart, and they land once.
        with database_errors(self._database.url, f"writing dead letters to {self.target!r}"), \
                self.engine.begin() as conn:
            # SQLAlchemy keeps an executemany's row count only when asked: without it,
            # PostgreSQL's is -1 and no letter would count as new.
            result = conn.execution_options(preserve_rowcount=True).execute(
                statement, letters.to_pylist())
        return max(int(result.rowcount), 0)

    def read(self) -> pa.Table:
        with self.engine.connect() as conn:
            rows = [dict(row._mapping) for row in conn.execute(sa.select(self.table))]
        return pa.Table.from_pylist([_as_letter(row) for row in rows], schema=DEAD_LETTER_SCHEMA)

    def count(self) -> int:
        with self.engine.connect() as conn:
            query = sa.select(sa.func.count()).select_from(self.table)
            return int(conn.execute(query).scalar_one())

    def close(self) -> None:
        self._database.dispose()

    def _require_table(self) -> None:
        database = self.engine.url.database
        # Connecting to a SQLite file that is not there would create it.
        if self._database.dialect == "sqlite" and database not in (None, "", ":memory:") and (
            not os.path.exists(database)
        ):
            raise LocationNotFoundError(f"no SQLite database at {database!r}")
        if not sa.inspect(self.engine).has_table(self.table.name, schema=self.table.schema):
            raise LocationNotFoundError(
                f"no dead-letter table {self.table.fullname!r} in {self.engine.url!r}"
            )


def _table_for(name: str, db_schema: str | None) -> sa.Table:
    types: dict[str, Any] = {
        "string": sa.Text(),
        "int32": sa.Integer(),
        "int64": sa.BigInteger(),
        "binary": sa.LargeBinary(),
        "timestamp[us, tz=UTC]": sa.DateTime(timezone=True),
    }
    columns = [
        sa.Column(field.name, types[str(field.type)], primary_key=field.name == "letter_id",
                  nullable=field.nullable)
        for field in DEAD_LETTER_SCHEMA
    ]
    return sa.Table(name, sa.MetaData(), *columns, schema=db_schema)


def _as_letter(row: dict[str, Any]) -> dict[str, Any]:
    stamp = row["dead_lettered_at"]
    if isinstance(stamp, dt.datetime) and stamp.tzinfo is None:
        # SQLite keeps no zone; the sink only ever stores UTC.
        row["dead_lettered_at"] = stamp.replace(tzinfo=dt.UTC)
    return row
