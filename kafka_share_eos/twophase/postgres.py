"""A Postgres participant: the user's effect and a ledger of applied keys, prepared together.

Prepare opens a transaction, adds the batch's keys to the ledger (:mod:`.postgres_ledger`), runs
the effect for the new records only (a per-record SQL effect inside the server:
:mod:`.row_effect`), and ends with ``PREPARE TRANSACTION '<gid>'``. The prepared
transaction survives the death of the session and of the server; ``COMMIT PREPARED`` /
``ROLLBACK PREPARED`` finish it from any session (:mod:`.postgres_prepared`).

SQLAlchemy's ``begin_twophase()`` is not used: closing its connection after ``prepare()`` rolls
the prepared transaction back, whereas here the connection must be released right after prepare.

The module imports without SQLAlchemy (``from kafka_share_eos import *`` must work with any set of
extras): the constructor checks that it is installed and the methods import what they use.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from functools import partial
from typing import TypeAlias

import pyarrow as pa

from kafka_share_eos import faults
from kafka_share_eos._extras import require_sql
from kafka_share_eos._libs import psycopg, sa
from kafka_share_eos.errors import (
    PreparedTransactionsDisabledError as PreparedTransactionsDisabledError,
)
from kafka_share_eos.errors import TwoPhaseCommitError
from kafka_share_eos.sinks.sql_engine import SqlDatabase, create_sql_engine, database_errors
from kafka_share_eos.twophase.postgres_ledger import PostgresLedger, postgres_type
from kafka_share_eos.twophase.postgres_prepared import (
    aborted,
    check_prepared_transactions,
    finish_prepared,
    gid_of,
    parse_gid,
    prepare_transaction,
    prepared_gids,
)
from kafka_share_eos.twophase.protocol import Token, Transaction, app_of, check_name
from kafka_share_eos.twophase.row_effect import server_loop

Effect: TypeAlias = "str | sa.TextClause | Callable[[sa.Connection, pa.Table], None]"
"""SQL run once per new record (columns as ``:name`` parameters), or ``f(connection, rows)``."""

# SQLSTATEs of a transaction the server rolled back whole: deadlock victim, serialization failure.
_ROLLED_BACK_BY_SERVER = frozenset({"40P01", "40001"})
_DEADLOCK_ATTEMPTS = 5
_LOCK_TIMEOUT = "55P03"
# How long one part of a batch prepared on the executors waits on a lock before it looks whether
# another part of the same batch, already prepared, holds it: a prepared part keeps its locks
# until the driver commits after every task ended, so that wait would never end.
SIBLING_WAIT_S = 10


def _sqlstate(error: BaseException) -> str | None:
    """The SQLSTATE of ``error``, psycopg's own or SQLAlchemy's wrapper of it."""
    wrapped = getattr(error, "orig", None)
    code = getattr(error, "sqlstate", None) or getattr(wrapped, "sqlstate", None)
    return str(code) if code is not None else None


def _rolled_back_by_server(error: BaseException) -> bool:
    """Whether ``error`` means that the server rolled the whole transaction back, so that
    preparing it again is safe."""
    return _sqlstate(error) in _ROLLED_BACK_BY_SERVER


class PostgresParticipant:
    """Applies a non-idempotent effect to Postgres exactly once per record key.

    Args:
        engine: SQLAlchemy engine or URL of the database (``postgresql+psycopg://...``).
        effect: either SQL executed once per new record with the record's columns bound as
            ``:column`` parameters (``UPDATE accounts SET balance = balance + :amount WHERE id =
            :account``), or a function ``effect(connection, rows)`` run inside the transaction
            with an Arrow table of the new records. It must not commit or roll back.
        name: participant name, unique within a coordinator; part of every gid.
        ledger_table: table of applied keys, created on first use with the key columns as
            primary key. One ledger per effect: applications applying the same effect to the
            same tables share it (its primary key decides which of them applies a record both
            hold), participants with different effects must not.

    Raises:
        MissingExtraError: SQLAlchemy or psycopg is not installed (``[postgres]``).
        ConfigurationError: ``name`` is empty or has characters other than letters, digits,
            ``_`` and ``-``.
    """

    def __init__(
        self,
        engine: sa.Engine | str,
        effect: Effect,
        *,
        name: str = "postgres",
        ledger_table: str | None = None,
    ) -> None:
        require_sql(engine, f"{type(self).__name__} {name!r}")
        # Explicit BEGIN / PREPARE TRANSACTION statements: the driver must not open its own.
        # A copy sent to an executor or a Spark Connect server connects from the URL.
        self._database = SqlDatabase(engine, autocommit=True)
        self._effect = effect
        self._name = check_name("name", name)
        self._ledger = PostgresLedger(self._database, ledger_table or f"kse_ledger_{name}")
        self._checked_server = False

    @property
    def _engine(self) -> sa.Engine:
        return self._database.engine

    def _quote(self, identifier: str) -> str:
        return str(self._engine.dialect.identifier_preparer.quote(identifier))

    @property
    def name(self) -> str:
        """Participant name."""
        return self._name

    @property
    def ledger_table(self) -> str:
        """Name of the ledger of applied keys."""
        return self._ledger.name

    def check_target(self) -> None:
        """Connect to the database and check that it can PREPARE TRANSACTION (the ledger table
        is the participant's own to create), before any record is read.

        Raises:
            DatabaseUnreachableError: no connection could be opened.
            PreparedTransactionsDisabledError: the server has ``max_prepared_transactions = 0``.
        """
        with database_errors(self._database.url, f"checking participant {self._name!r}",
                             before_any_record=True):
            self._check_server()

    def gid(self, txid: str, part: str = "") -> str:
        """The Postgres global transaction id of this participant's ``part`` of ``txid``."""
        return gid_of(txid, self._name, part)

    def prepare(self, rows: pa.Table, txn: Transaction, part: str = "") -> Token:
        """Apply the effect of the records not in the ledger, record them, and prepare.

        ``part`` names one of several prepared transactions of this participant in ``txn``
        (one per Spark partition when preparing on the executors). A key another transaction
        holds uncommitted (another application's batch, prepared or not) makes this wait for
        that transaction's end, then skip the key if it committed. A transaction the server
        chose as a deadlock victim is tried again.

        A part that waits :data:`SIBLING_WAIT_S` seconds on a lock while other parts of this
        participant's ``txn`` are prepared fails rather than wait on: if the effects of two
        Spark partitions touch the same rows, the prepared part holds them until the batch is
        decided, which is after this part. The check does not see which transaction holds the
        lock, so a wait that long on another one fails too; the batch then runs again.

        Raises:
            PreparedTransactionsDisabledError: the server has ``max_prepared_transactions = 0``.
            DatabaseUnavailableError: the database could not be reached or the connection was
                lost; what was prepared, if anything, is rolled back by the next recovery.
        """
        with database_errors(self._database.url, f"prepare of {self.gid(txn.txid, part)!r}"):
            self.create_ledger(rows.schema, txn.key_columns)
            attempt = 1
            while True:
                try:
                    return self._prepare_once(rows, txn, part)
                except Exception as error:
                    if _sqlstate(error) == _LOCK_TIMEOUT:
                        self._check_no_sibling_holds(txn, part)
                        continue
                    if attempt == _DEADLOCK_ATTEMPTS or not _rolled_back_by_server(error):
                        raise
                    attempt += 1

    def _check_no_sibling_holds(self, txn: Transaction, part: str) -> None:
        """Raise when another part of this participant's ``txn`` is prepared while ``part``
        timed out on a lock: such a part keeps its rows until the batch is decided, after
        ``part``, so if it holds the lock the wait never ends."""
        siblings = prepared_gids(self._engine, f"{self.gid(txn.txid)}:")
        if siblings:
            raise TwoPhaseCommitError(
                f"participant {self._name!r}: Spark partition {part!r} of transaction "
                f"{txn.txid!r} waited {SIBLING_WAIT_S} s on a lock while other partitions of "
                f"the same batch were prepared ({', '.join(siblings)}); a prepared partition "
                "holds its rows until the batch is decided, after every partition, so if the "
                "effects of records in different partitions touch the same rows, prepare this "
                "participant on the driver (prepare_on='driver'); the batch is rolled back "
                "and runs again when the query restarts"
            )

    def _prepare_once(self, rows: pa.Table, txn: Transaction, part: str) -> Token:
        gid = self.gid(txn.txid, part)
        with self._engine.connect() as conn:
            conn.exec_driver_sql("BEGIN")
            try:
                if part:
                    conn.exec_driver_sql(f"SET LOCAL lock_timeout = '{SIBLING_WAIT_S}s'")
                new_rows = self._ledger.claim(conn, rows, txn)
                if new_rows.num_rows == 0:
                    # Nothing to apply: no prepared transaction to resolve later.
                    conn.exec_driver_sql("ROLLBACK")
                    return Token(self._name, txn.txid, 0, {"gid": None}, part)
                # The ledger claims are written, the effect not: mid-write for this sink.
                faults.maybe_crash(faults.SINK_MID_WRITE)
                self._run_effect(conn, new_rows)
                xid = conn.exec_driver_sql("SELECT pg_current_xact_id()::text").scalar_one()
                faults.maybe_crash(faults.TWO_PHASE_POSTGRES_BEFORE_PREPARE)
                prepare_transaction(conn, gid)
            except BaseException:
                # A broken connection rolls back by itself: keep the original error.
                with contextlib.suppress(sa.exc.DBAPIError):
                    conn.exec_driver_sql("ROLLBACK")
                raise
        return Token(self._name, txn.txid, new_rows.num_rows, {"gid": gid, "xid": xid}, part)

    def commit(self, token: Token) -> None:
        """``COMMIT PREPARED``; asks the server how the transaction ended when it is gone.

        Raises:
            TwoPhaseCommitError: the prepared transaction is gone and the server rolled it back:
                something rolled it back after the commit decision.
            DatabaseUnavailableError: the database could not be reached or the connection was
                lost; the decision stays logged, and the next recovery commits the transaction
                if it is still prepared.
        """
        gid = token.data.get("gid")
        if gid is None:
            return
        with database_errors(self._database.url, f"COMMIT PREPARED {gid!r}"):
            if (finish_prepared(self._engine, "COMMIT PREPARED", str(gid))
                    or not self._rolled_back(token)):
                return
        raise TwoPhaseCommitError(
            f"prepared transaction {gid!r} is gone and was rolled back, so its rows are not in "
            f"ledger {self._ledger.name!r}: something rolled it back after the commit decision "
            f"(an application sharing app_id {app_of(token.txid)!r} in this database, or a "
            "ROLLBACK PREPARED by hand)"
        )

    def _rolled_back(self, token: Token) -> bool:
        """Whether the server rolled back the (no longer prepared) transaction of ``token``.

        Tokens of older releases carry no transaction id: their ledger names the transaction
        of each key instead.
        """
        with self._engine.connect() as conn:
            if "xid" in token.data:
                return aborted(conn, str(token.data["xid"]))
            applied = self._ledger.names_txid(conn, token.txid)
        return token.rows_written > 0 and not applied

    def abort(self, token: Token) -> None:
        """``ROLLBACK PREPARED``; a no-op when the transaction is already gone."""
        gid = token.data.get("gid")
        if gid is not None:
            with database_errors(self._database.url, f"ROLLBACK PREPARED {gid!r}"):
                finish_prepared(self._engine, "ROLLBACK PREPARED", str(gid))

    def recover(self, prefix: str) -> list[Token]:
        """Prepared transactions of this participant, in this database, under ``prefix``."""
        with database_errors(self._database.url,
                             f"listing the transactions prepared under {prefix!r}"):
            self._check_server()
            gids = prepared_gids(self._engine, prefix)
        tokens = []
        for gid in gids:
            named = parse_gid(gid)
            if named is not None and named.participant == self._name:
                tokens.append(Token(self._name, named.txid, 0, {"gid": gid}, named.part))
        return tokens

    def applied(self, keys: pa.Table) -> list[bool]:
        """For each row of ``keys`` (the key columns), whether a committed batch applied it:
        a prepared transaction's ledger rows stay invisible until it commits."""
        return self._ledger.applied(keys)

    def rollback_parts(self, txid: str, part_prefix: str) -> int:
        """Roll back this participant's prepared parts of ``txid`` starting with ``part_prefix``.

        Only safe while no decision about ``txid`` can exist, i.e. during its prepare phase.
        """
        tokens = self.recover(f"{self.gid(txid)}:{part_prefix}")
        for token in tokens:
            self.abort(token)
        return len(tokens)

    def _run_effect(self, conn: sa.Connection, rows: pa.Table) -> None:
        if callable(self._effect):
            self._effect(conn, rows)
            return

        statement = sa.text(self._effect) if isinstance(self._effect, str) else self._effect
        loop = server_loop(statement.text, rows, partial(postgres_type, self._engine))
        if loop is None:
            conn.execute(statement, rows.to_pylist())
            return
        raw = conn.connection.driver_connection
        assert raw is not None
        try:
            raw.execute(loop)
        except psycopg.Error as error:
            # Surfaced as SQLAlchemy's, like the errors of the one-by-one path.
            raise sa.exc.DBAPIError.instance(loop[:200], None, error, psycopg.Error) from error

    def create_ledger(self, schema: pa.Schema, keys: Sequence[str]) -> None:
        """Check the server and create the ledger for ``keys`` of ``schema`` unless it exists.

        Runs once per participant object; several processes may run it at once.
        """
        self._check_server()
        self._ledger.create(schema, keys)

    def _check_server(self) -> None:
        if not self._checked_server:
            check_prepared_transactions(self._engine, self._name)
            self._checked_server = True


def _resolution_only(conn: sa.Connection, rows: pa.Table) -> None:
    raise TwoPhaseCommitError("a participant made to resolve transactions cannot prepare any")


def prepared_participants(engine: sa.Engine | str, prefix: str) -> list[PostgresParticipant]:
    """A participant for each name with transactions prepared under ``prefix`` in the database:
    enough to commit or roll them back from any process, without knowing their effect.

    Raises:
        MissingExtraError: SQLAlchemy or psycopg is not installed (``[postgres]``).
        DatabaseUnreachableError: the database could not be reached.
    """
    require_sql(engine, "prepared_participants")

    bound = create_sql_engine(engine) if isinstance(engine, str) else engine
    with database_errors(bound.url, "listing the transactions prepared there"):
        gids = prepared_gids(bound, prefix)
    names = sorted({named.participant for named in map(parse_gid, gids) if named is not None})
    return [PostgresParticipant(bound, _resolution_only, name=name) for name in names]
