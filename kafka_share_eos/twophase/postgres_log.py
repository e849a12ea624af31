"""A decision log in a Postgres table, committed before any participant is told to commit.

The module imports without SQLAlchemy; the constructor checks that it is installed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_share_eos._extras import require_sql
from kafka_share_eos.twophase.protocol import Decision, store_first

if TYPE_CHECKING:
    from sqlalchemy import Engine


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

    def __init__(self, engine: Engine | str, table: str = "kse_2pc_decisions") -> None:
        require_sql(engine, "PostgresDecisionLog")
        from sqlalchemy import create_engine, text

        self._engine = create_engine(engine) if isinstance(engine, str) else engine
        self.first_writer_wins = True
        self._table = self._engine.dialect.identifier_preparer.quote(table)
        with self._engine.begin() as conn:
            conn.execute(
                text(
                    f"CREATE TABLE IF NOT EXISTS {self._table} ("
                    " txid text PRIMARY KEY,"
                    " decision jsonb NOT NULL,"
                    " decided_at timestamptz NOT NULL DEFAULT now())"
                )
            )

    def write(self, decision: Decision) -> Decision:
        """Store ``decision`` unless its transaction already has one; return the stored one."""
        from sqlalchemy import text

        def create() -> bool:
            # A concurrent insert of the same txid makes this wait for its commit, then skip.
            with self._engine.begin() as conn:
                inserted = conn.execute(
                    text(
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
        from sqlalchemy import text

        with self._engine.connect() as conn:
            value = conn.execute(
                text(f"SELECT decision::text FROM {self._table} WHERE txid = :txid"),
                {"txid": txid},
            ).scalar_one_or_none()
        return None if value is None else Decision.from_json_text(value)

    def delete(self, txid: str) -> None:
        """Forget a resolved decision."""
        from sqlalchemy import text

        with self._engine.begin() as conn:
            conn.execute(text(f"DELETE FROM {self._table} WHERE txid = :txid"), {"txid": txid})

    def txids(self, prefix: str) -> list[str]:
        """Transaction ids with a stored decision that start with ``prefix``."""
        from sqlalchemy import text

        with self._engine.connect() as conn:
            rows = conn.execute(
                text(f"SELECT txid FROM {self._table} WHERE starts_with(txid, :p) ORDER BY txid"),
                {"p": prefix},
            ).scalars()
            return list(rows)
