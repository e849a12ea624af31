"""SQLAlchemy engines for the URLs users give the SQL sinks and dead-letter stores, the database
a writer connects to from whichever process it was pickled into, and the error naming the
database when it cannot be reached."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from kafka_share_eos._libs import sa
from kafka_share_eos._process_local import ProcessLocal, nothing
from kafka_share_eos.errors import (
    ConfigurationError,
    DatabaseUnavailableError,
    DatabaseUnreachableError,
    MissingExtraError,
)

SQLITE_BUSY_TIMEOUT_S = 60.0
"""How long a SQLite writer waits for another's write lock unless the URL sets ``timeout``."""


def create_sql_engine(url: str, **kwargs: Any) -> sa.Engine:
    """An engine for ``url`` (keyword arguments go to :func:`sqlalchemy.create_engine`).

    SQLite lets one connection write at a time, and pysqlite gives up after 5 s: a batch of one
    application (or executor task) then fails with "database is locked" while another holds
    its transaction open a little longer, where PostgreSQL would wait for the row lock. So a
    SQLite URL without ``?timeout=`` waits :data:`SQLITE_BUSY_TIMEOUT_S`.

    Raises:
        ConfigurationError: ``url`` is not a SQLAlchemy URL, or names a dialect SQLAlchemy has
            not got.
        MissingExtraError: the URL's driver is not installed.
    """
    parsed = parse_sql_url(url)
    if parsed.get_backend_name() == "sqlite" and "timeout" not in parsed.query:
        connect_args = {"timeout": SQLITE_BUSY_TIMEOUT_S, **kwargs.pop("connect_args", {})}
        kwargs["connect_args"] = connect_args
    shown = parsed.render_as_string(hide_password=True)
    try:
        return sa.create_engine(parsed, **kwargs)
    except ImportError as error:
        raise MissingExtraError(
            f"the SQL URL {shown!r}; the postgres extra installs psycopg, for "
            "postgresql+psycopg:// URLs",
            error.name or parsed.get_driver_name(), "postgres",
        ) from error
    except sa.exc.ArgumentError as error:
        raise ConfigurationError(f"SQL URL {shown!r}: {error}") from error


class SqlDatabase(ProcessLocal):
    """The database of a writer, given as an engine or a URL, in whichever process the writer is.

    The engine is the given one, else one created from the URL on first use. A pickled copy
    keeps the URL (with its password: the copy signs in by itself) and creates an engine of its
    own on first use, in its own process.

    Args:
        engine: a SQLAlchemy engine or URL.
        autocommit: the engine runs every statement in autocommit mode, for writers that send
            their own ``BEGIN`` and ``PREPARE TRANSACTION``.
        pool_in_copies: whether the engine of a copy keeps idle connections for the next
            transaction; off for copies that live as long as one Spark task.

    Raises:
        ConfigurationError: ``engine`` is a string but no SQLAlchemy URL.
    """

    _PROCESS_LOCAL = ProcessLocal.attributes(_engine=nothing, _owns_engine=lambda: True)

    def __init__(
        self, engine: sa.Engine | str, *, autocommit: bool = False, pool_in_copies: bool = True
    ) -> None:
        self._autocommit = autocommit
        self._pooled = True
        self._pool_in_copies = pool_in_copies
        self._engine: sa.Engine | None = None
        self._owns_engine = isinstance(engine, str)
        if isinstance(engine, str):
            self.url = engine
        else:
            self.url = engine.url.render_as_string(hide_password=False)
            self._engine = self._with_options(engine)
        self.dialect = parse_sql_url(self.url).get_backend_name()

    def __getstate__(self) -> dict[str, Any]:
        return {**super().__getstate__(), "_pooled": self._pool_in_copies}

    def __setstate__(self, state: Mapping[str, Any]) -> None:
        """Start a copy, made in another process.

        Raises:
            ConfigurationError: the database is an in-memory SQLite one, which the copy cannot
                reach. A Spark Connect server's foreachBatch worker unpickles the strategy
                when the query starts, so the query is refused then; the client's PySpark
                would hide any error raised while it pickles.
        """
        super().__setstate__(state)
        if self.dialect == "sqlite" and _in_memory(parse_sql_url(self.url)):
            raise ConfigurationError(
                "an in-memory SQLite database cannot be used from another process: this copy "
                "of the strategy (in a Spark Connect server's foreachBatch worker, or a Spark "
                "task) would write to an empty database of its own, gone with it; give a "
                "SQLite file on the machine that runs the batches (sqlite:////data/orders.db) "
                "or PostgreSQL"
            )

    @property
    def engine(self) -> sa.Engine:
        """The engine: the given one, or created from the URL on first use (also in a copy).

        Raises:
            MissingExtraError: the URL's driver is not installed.
        """
        if self._engine is None:
            pool = {} if self._pooled else {"poolclass": sa.pool.NullPool}
            self._engine = self._with_options(create_sql_engine(self.url, **pool))
        return self._engine

    def dispose(self) -> None:
        """Release the pooled connections of an engine created here (a given engine is its
        giver's); the next use creates another."""
        if self._owns_engine and self._engine is not None:
            self._engine.dispose()
            self._engine = None

    def _with_options(self, engine: sa.Engine) -> sa.Engine:
        if self._autocommit:
            return engine.execution_options(isolation_level="AUTOCOMMIT")
        return engine


def _in_memory(url: sa.URL) -> bool:
    """Whether a SQLite URL names a database in the memory of the process that opens it."""
    database = url.database or ""
    return database in ("", ":memory:") or database.startswith("file::memory:") or (
        url.query.get("mode") == "memory")


def parse_sql_url(url: str) -> sa.URL:
    """``url`` parsed by SQLAlchemy.

    Raises:
        ConfigurationError: ``url`` is not a SQLAlchemy URL; the message shows no more of it
            than its scheme, as a password may be in the rest.
    """
    try:
        return sa.make_url(url)
    except sa.exc.ArgumentError as error:
        scheme = url.partition("://")[0] if "://" in url else "no scheme"
        raise ConfigurationError(
            f"the SQL URL ({scheme}) is not a SQLAlchemy URL: {error}; it is "
            "dialect+driver://user:password@host:port/database, e.g. "
            "postgresql+psycopg://app@db:5432/orders or sqlite:////data/orders.db"
        ) from error


# SQLSTATEs of a connection that failed or ended: connection exceptions (class 08), and a server
# shutting down, crashed or still recovering (admin_shutdown, crash_shutdown, cannot_connect_now).
_UNREACHABLE_STATES = frozenset({"57P01", "57P02", "57P03"})


def _unreachable(error: sa.exc.DBAPIError) -> bool:
    """Whether ``error`` is psycopg's for a connection that could not be made or was lost: one
    without a SQLSTATE is the client's own (refused, reset, closed). A busy SQLite file is no
    lost connection."""
    if error.connection_invalidated:
        return True
    # psycopg's errors all have a sqlstate, None for the client's own; SQLite's have none.
    state: str | None = getattr(error.orig, "sqlstate", "")
    return state is None or state.startswith("08") or state in _UNREACHABLE_STATES


_NEVER_CONNECTED = "_kafka_share_eos_never_connected"


def _note_first_connection(context: Any) -> None:
    """Mark an error raised while a connection was being opened: SQLAlchemy gives such an
    error no ``Connection``, and nothing of the operation reached the database."""
    if context.connection is None and context.sqlalchemy_exception is not None:
        setattr(context.sqlalchemy_exception, _NEVER_CONNECTED, True)


def _listen_for_first_connections() -> None:
    # Registered on first use rather than at import: importing the toolkit loads no SQLAlchemy.
    if not sa.event.contains(sa.Engine, "handle_error", _note_first_connection):
        sa.event.listen(sa.Engine, "handle_error", _note_first_connection)


def never_connected(error: BaseException) -> bool:
    """Whether ``error`` is SQLAlchemy's for a connection that never opened."""
    return bool(getattr(error, _NEVER_CONNECTED, False))


def describe_database(url: str | sa.URL) -> str:
    """The database of ``url`` as a person names it: a SQLite file, or a database at a host
    and port (PostgreSQL's 5432 when the URL gives none), with the URL without its password."""
    parsed = sa.make_url(url)
    shown = parsed.render_as_string(hide_password=True)
    if parsed.get_backend_name() == "sqlite":
        return f"the SQLite database {parsed.database or ':memory:'!r}"
    port = parsed.port or (5432 if parsed.get_backend_name() == "postgresql" else "?")
    return (f"the database {parsed.database or '(default)'!r} at {parsed.host or 'localhost'}:"
            f"{port} ({shown})")


def _reason(error: sa.exc.DBAPIError) -> str:
    text = str(error.orig).strip()
    return f"{type(error.orig).__name__}: {text.splitlines()[0] if text else 'no reason'}"


@contextmanager
def database_errors(url: str | sa.URL, operation: str, *,
                    before_any_record: bool = False) -> Iterator[None]:
    """Raise :class:`~kafka_share_eos.errors.DatabaseUnavailableError` for a connection to
    ``url`` that is lost during ``operation``, and its subclass
    :class:`~kafka_share_eos.errors.DatabaseUnreachableError` for one that never opened (other
    errors pass unchanged).

    The message shows the URL without its password. For a lost connection it says that a
    commit sent on it may or may not have taken effect; for one that never opened, that
    nothing reached the database, and with ``before_any_record`` (a check before the query
    reads) that no record was read or written either.
    """
    _listen_for_first_connections()
    try:
        yield
    except (sa.exc.OperationalError, sa.exc.InterfaceError) as error:
        if never_connected(error):
            raise DatabaseUnreachableError(
                f"{operation}: could not connect to {describe_database(url)}: {_reason(error)}"
                + ("; the connection never opened and no record was read or written: check "
                   "the URL and that the database is up, then start the query"
                   if before_any_record else
                   "; the connection never opened, so nothing of it reached the database. "
                   "Once the database is reachable, restart the query on the same checkpoint, "
                   "which applies the batch exactly once")
            ) from error
        if not _unreachable(error):
            raise
        shown = sa.make_url(url).render_as_string(hide_password=True)
        raise DatabaseUnavailableError(
            f"{operation}: the connection to the database {shown} was lost ({_reason(error)}); "
            "a commit sent on that connection may or may not have taken effect. Nothing is "
            "retried here: once the database is back, restart the query on the same "
            "checkpoint, which applies the batch exactly once"
        ) from error
