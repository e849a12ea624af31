"""A decision log in a Postgres table, committed before any participant is told to commit.

The module imports without SQLAlchemy (see :mod:`kafka_share_eos._extras`); the constructor
checks that it is installed.
"""

from __future__ import annotations

from contextlib import AbstractContextManager

from kafka_share_eos._extras import require_sql
from kafka_share_eos._libs import sa
from kafka_share_eos.sinks.sql_engine import SqlDatabase, database_errors
from kafka_share_eos.sinks.target_checks import check_sql_database
from kafka_share_eos.twophase.protocol import Decision, store_first


class PostgresDecisionLog:
    """Stores decisions as rows of ``table`` (created if missing), one per transaction id.

    Each write is its own committed transaction, so the decision is durable (as durable as the
    server's ``synchronous_commit`` makes it) before the coordinator moves on. The primary key
    on the transaction id makes the first decision win, also against other processes.

    Args:
        engine: a SQLAlchemy engine or URL (``postgresql+psycopg://...``).
        table: name of the log table.

    Raises:
        MissingExtraError: SQLAlchemy or psycopg is not installed (``[postgres]``).
    """

    def __init__(self, engine: sa.Engine | str, table: str = "kse_2pc_decisions") -> None:
        require_sql(engine, "PostgresDecisionLog")
        # A copy in another process (a Spark Connect server's) connects from the URL.
        self._database = SqlDatabase(engine)
        self.first_writer_wins = True
        self._table = self._engine.dialect.identifier_preparer.quote(table)
        with database_errors(self._database.url, f"decision log {self._table}: creating it",
                             before_any_record=True), self._engine.begin() as conn:
            conn.execute(
                sa.text(
                    f"CREATE TABLE IF NOT EXISTS {self._table} ("
                    " txid text PRIMARY KEY,"
                    " decision jsonb NOT NULL,"
                    " decided_at timestamptz NOT NULL DEFAULT now())"
                )
            )

    @property
    def _engine(self) -> sa.Engine:
        return self._database.engine

    def check_target(self) -> None:
        """Connect to the database, before any record is read (the constructor created the
        table).

        Raises:
            DatabaseUnreachableError: no connection to the database could be opened.
        """
        check_sql_database(self._database, f"decision log {self._table}")

    def _errors(self, operation: str) -> AbstractContextManager[None]:
        """A lost or refused connection as an error naming this log and ``operation``."""
        return database_errors(self._database.url, f"decision log {self._table}: {operation}")

    def write(self, decision: Decision) -> Decision:
        """Store ``decision`` unless its transaction already has one; return the stored one."""

        def create() -> bool:
            # A concurrent insert of the same txid makes this wait for its commit, then skip.
            with self._errors(f"writing the decision of {decision.txid!r}"), \
                    self._engine.begin() as conn:
                inserted = conn.execute(
                    sa.text(
                        f"INSERT INTO {self._table} (txid, decision)"
                        " VALUES (:txid, CAST(:d AS jsonb)) ON CONFLICT (txid) DO NOTHING"
                        " RETURNING txid"
                    ),
                    {"txid": decision.txid, "d": decision.to_json_text()},
                ).first()
            return inserted is not None

        return store_first(decision, create, lambda: self.read(decision.txid))

    def read(self, txid: str) -> Decision | None:
        """The decision stored for ``txid``, if any."""
        with self._errors(f"reading the decision of {txid!r}"), self._engine.connect() as conn:
            value = conn.execute(
                sa.text(f"SELECT decision::text FROM {self._table} WHERE txid = :txid"),
                {"txid": txid},
            ).scalar_one_or_none()
        if value is None:
            return None
        return Decision.from_json_text(value, where=f"table {self._table}, txid {txid!r}")

    def delete(self, txid: str) -> None:
        """Forget a resolved decision."""
        with self._errors(f"deleting the decision of {txid!r}"), self._engine.begin() as conn:
            conn.execute(sa.text(f"DELETE FROM {self._table} WHERE txid = :txid"), {"txid": txid})

    def txids(self, prefix: str) -> list[str]:
        """Transaction ids with a stored decision that start with ``prefix``."""
        with self._errors(f"listing the decisions under {prefix!r}"), \
                self._engine.connect() as conn:
            rows = conn.execute(
                sa.text(
                    f"SELECT txid FROM {self._table} WHERE starts_with(txid, :p) ORDER BY txid"
                ),
                {"p": prefix},
            ).scalars()
            return list(rows)
