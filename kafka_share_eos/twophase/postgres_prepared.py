"""Postgres's prepared transactions, by gid: whether the server allows them, which are prepared
under a prefix, what a participant's gid names, how a transaction that is no longer prepared
ended, and ``PREPARE TRANSACTION`` / ``COMMIT PREPARED`` / ``ROLLBACK PREPARED``.

A gid is ``<txid>:<participant>[:<part>]``, the txid being ``kse:<app_id>:<batch_id>:<random>``
(:meth:`~kafka_share_eos.twophase.protocol.Transaction.new`). A prepared transaction survives the
death of the session and of the server, and any session of the database finishes it.

The module imports without SQLAlchemy (see :mod:`kafka_share_eos._extras`).
"""

from __future__ import annotations

from typing import NamedTuple

from kafka_share_eos._libs import sa
from kafka_share_eos.errors import PreparedTransactionsDisabledError

# SQLSTATE of "prepared transaction with identifier ... does not exist".
_UNDEFINED_OBJECT = "42704"


class PreparedGid(NamedTuple):
    """What a participant's gid names."""

    txid: str
    participant: str
    part: str


def gid_of(txid: str, participant: str, part: str = "") -> str:
    """The gid of ``participant``'s ``part`` of ``txid``."""
    return f"{txid}:{participant}" + (f":{part}" if part else "")


def parse_gid(gid: str) -> PreparedGid | None:
    """What ``gid`` names; None for a gid no participant made."""
    # kse:<app_id>:<batch_id>:<random>:<participant>[:<part>]
    fields = gid.split(":")
    if len(fields) not in (5, 6):
        return None
    return PreparedGid(":".join(fields[:4]), fields[4], fields[5] if len(fields) == 6 else "")


def _literal(value: str) -> str:
    """``value`` as a SQL string literal: PREPARE/COMMIT PREPARED take no bind parameters."""
    return "'" + value.replace("'", "''") + "'"


def check_prepared_transactions(engine: sa.Engine, participant: str) -> None:
    """Raise unless the server of ``engine`` allows prepared transactions.

    Raises:
        PreparedTransactionsDisabledError: the server has ``max_prepared_transactions = 0``.
    """
    with engine.connect() as conn:
        limit = int(conn.exec_driver_sql("SHOW max_prepared_transactions").scalar_one())
    if limit < 1:
        url = engine.url.render_as_string(hide_password=True)
        raise PreparedTransactionsDisabledError(
            f"the Postgres server of {url} has max_prepared_transactions = 0, so participant "
            f"{participant!r} cannot PREPARE TRANSACTION; set max_prepared_transactions in "
            "postgresql.conf to at least the number of pipelines using two-phase commit on "
            "this server (times their Postgres participants) and restart the server"
        )


def prepare_transaction(conn: sa.Connection, gid: str) -> None:
    """``PREPARE TRANSACTION`` the transaction open on ``conn`` as ``gid``."""
    conn.exec_driver_sql(f"PREPARE TRANSACTION {_literal(gid)}")


def finish_prepared(engine: sa.Engine, command: str, gid: str) -> bool:
    """Run ``command`` (``COMMIT PREPARED`` or ``ROLLBACK PREPARED``) on ``gid``; False if no
    such prepared transaction exists."""
    with engine.connect() as conn:
        try:
            conn.exec_driver_sql(f"{command} {_literal(gid)}")
        except sa.exc.DBAPIError as error:
            if getattr(error.orig, "sqlstate", None) == _UNDEFINED_OBJECT:
                return False
            raise
    return True


def prepared_gids(engine: sa.Engine, prefix: str) -> list[str]:
    """Gids of the transactions prepared in ``engine``'s database under ``prefix``, oldest first."""
    with engine.connect() as conn:
        return list(
            conn.execute(
                sa.text(
                    "SELECT gid FROM pg_prepared_xacts WHERE database = current_database()"
                    " AND starts_with(gid, :p) ORDER BY prepared"
                ),
                {"p": prefix},
            ).scalars()
        )


def aborted(conn: sa.Connection, xid: str) -> bool:
    """Whether the server rolled back transaction ``xid`` (``pg_current_xact_id()``).

    Postgres keeps every transaction's outcome until its id is frozen away (hundreds of millions
    of transactions later); an outcome it no longer knows counts as a commit.
    """
    status = conn.execute(
        sa.text("SELECT pg_xact_status(CAST(:x AS xid8))"), {"x": xid}
    ).scalar_one()
    return bool(status == "aborted")
