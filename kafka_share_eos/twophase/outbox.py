"""An outbox participant: notifications recorded in Postgres, sent later by a separate notifier.

An external call (an e-mail, a webhook) cannot be prepared. The outbox pattern turns it into a
row that can: each new record adds one row to an outbox table inside the prepared transaction,
so a notification exists exactly once per record, if and only if the batch committed. A notifier
process reads the outbox, sends, and marks or deletes the rows it sent; the receiving side
deduplicates on the outbox ``id`` because the notifier itself may crash after sending.

The module imports without SQLAlchemy (see :mod:`kafka_share_eos._extras`); the constructor
checks that it is installed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import pyarrow as pa

from kafka_share_eos._libs import sa
from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.twophase.postgres import PostgresParticipant


class OutboxParticipant(PostgresParticipant):
    """Appends one JSON message per new record to an outbox table.

    Args:
        engine: SQLAlchemy engine or URL of the database.
        columns: the record columns copied into each message's JSON ``payload``.
        table: the outbox table, created if missing: ``id bigserial, txid, payload jsonb,
            created_at``.
        name: participant name, unique within a coordinator.

    Raises:
        MissingExtraError: SQLAlchemy or psycopg is not installed (``[postgres]``).
        ConfigurationError: ``columns`` is empty, or ``name`` is not a usable name.
    """

    def __init__(
        self,
        engine: sa.Engine | str,
        columns: Sequence[str],
        *,
        table: str = "kse_outbox",
        name: str = "outbox",
    ) -> None:
        if not columns:
            raise ConfigurationError("columns must name at least one record column for the payload")
        super().__init__(engine, self._append, name=name)
        self._columns = list(columns)
        self._outbox = self._quote(table)
        with self._engine.connect() as conn:
            conn.execute(
                sa.text(
                    f"CREATE TABLE IF NOT EXISTS {self._outbox} (id bigserial PRIMARY KEY,"
                    " payload jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())"
                )
            )

    def _append(self, conn: sa.Connection, rows: pa.Table) -> None:
        missing = [c for c in self._columns if c not in rows.column_names]
        if missing:
            raise ConfigurationError(
                f"outbox columns {missing} are not in the batch (columns: {rows.column_names})"
            )
        payloads = [json.dumps(m, default=str) for m in rows.select(self._columns).to_pylist()]
        conn.execute(
            sa.text(f"INSERT INTO {self._outbox} (payload) SELECT unnest(CAST(:p AS jsonb[]))"),
            {"p": payloads},
        )
