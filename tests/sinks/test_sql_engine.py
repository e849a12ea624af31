"""SQLAlchemy engines for the SQL sinks' URLs: what a SQLite URL says is kept, and a pickled
copy of a writer's database connects by itself, unless it is in the memory of its process."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from helpers.pickled import copied

pytestmark = pytest.mark.timeout(180)


def test_a_sqlite_url_timeout_is_kept() -> None:
    from kafka_share_eos.sinks.sql_engine import SQLITE_BUSY_TIMEOUT_S, create_sql_engine

    cases = [("sqlite://", SQLITE_BUSY_TIMEOUT_S * 1000), ("sqlite://?timeout=2", 2000)]
    for url, busy_ms in cases:
        engine = create_sql_engine(url)
        with engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == busy_ms
        engine.dispose()


def test_a_copy_of_a_database_connects_from_the_url_with_an_engine_of_its_own(
    tmp_path: Path,
) -> None:
    """A database given as an engine travels as its URL, password included; the copy's engine
    is its own (disposing it leaves the given one alone), and keeps no idle connections when
    copies are short-lived Spark tasks."""
    from kafka_share_eos.sinks.sql_engine import SqlDatabase

    secured = SqlDatabase(sa.create_engine("postgresql+psycopg://app:s3cret@db:5432/orders"))
    assert copied(secured).url == "postgresql+psycopg://app:s3cret@db:5432/orders"
    given = sa.create_engine(f"sqlite:///{tmp_path / 'db'}")
    with given.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE t (x int)")
    database = SqlDatabase(given, pool_in_copies=False)

    copy = copied(database)
    with copy.engine.begin() as conn:
        conn.exec_driver_sql("INSERT INTO t VALUES (1)")
    assert copy.engine is not given and isinstance(copy.engine.pool, sa.pool.NullPool)
    copy.dispose()
    database.dispose()
    with given.connect() as conn:
        assert conn.exec_driver_sql("SELECT x FROM t").scalars().all() == [1]
    given.dispose()


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///:memory:",
                                 "sqlite:///file::memory:?cache=shared",
                                 "sqlite:///file:orders?mode=memory&uri=true"])
def test_an_in_memory_sqlite_database_refuses_to_be_copied(url: str) -> None:
    from kafka_share_eos.errors import ConfigurationError
    from kafka_share_eos.sinks.sql_engine import SqlDatabase

    with pytest.raises(ConfigurationError, match=r"in-memory SQLite .* SQLite file"):
        copied(SqlDatabase(url))
    assert copied(SqlDatabase("sqlite:///relative.db")).url == "sqlite:///relative.db"


def test_a_connection_that_never_opens_is_told_from_one_that_was_lost(tmp_path: Path) -> None:
    """A SQLite file in a directory that does not exist cannot be opened: nothing reached the
    database, and the error says so rather than that a commit's outcome is unknown."""
    from kafka_share_eos.errors import DatabaseUnavailableError, DatabaseUnreachableError
    from kafka_share_eos.sinks.sql_engine import database_errors, describe_database

    url = f"sqlite:///{tmp_path / 'nowhere' / 'shop.db'}"
    engine = sa.create_engine(url)
    with pytest.raises(DatabaseUnreachableError) as refused, \
            database_errors(url, "upsert of batch 3"), engine.connect():
        pass
    message = str(refused.value)
    assert message.startswith(f"upsert of batch 3: could not connect to {describe_database(url)}")
    assert "unable to open database file" in message
    assert "never opened, so nothing of it reached the database" in message
    assert "may or may not" not in message and "\n" not in message
    assert isinstance(refused.value, DatabaseUnavailableError)
    engine.dispose()

    assert describe_database("postgresql+psycopg://app:pw@db/shop") == (
        "the database 'shop' at db:5432 (postgresql+psycopg://app:***@db/shop)")
