"""The PostgreSQL server the suite starts: real queries, two-phase commit, isolation, clean-up."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from kafka_share_eos.proving_ground.launchers.postgres import (
    POSTGRES_URL_ENV,
    PostgresDatabases,
    PostgresNotFoundError,
    PostgresServer,
    postgres_for_tests,
)

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(120)]


def _leave_prepared(url: str, gid: str, statement: str) -> None:
    """Prepare a transaction and disconnect, as a process dying after PREPARE would."""
    dsn = make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("BEGIN")
        conn.execute(statement)
        conn.execute(f"PREPARE TRANSACTION '{gid}'")


def test_runs_real_queries(postgres_url: str) -> None:
    engine = create_engine(postgres_url)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE items (id int PRIMARY KEY, name text)"))
        conn.execute(
            text("INSERT INTO items VALUES (:id, :name)"),
            [{"id": i, "name": f"item-{i}"} for i in range(5)],
        )
        conn.execute(
            text("INSERT INTO items VALUES (3, 'again') ON CONFLICT (id) DO UPDATE SET name = 'x'")
        )
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT id, name FROM items ORDER BY id")).all()
    engine.dispose()
    assert [tuple(r) for r in rows] == [
        (0, "item-0"), (1, "item-1"), (2, "item-2"), (3, "x"), (4, "item-4"),
    ]


def test_prepared_transactions_commit_after_recovery(postgres_url: str) -> None:
    engine = create_engine(postgres_url)
    with engine.begin() as conn:
        assert int(conn.execute(text("SHOW max_prepared_transactions")).scalar_one()) > 0
        conn.execute(text("CREATE TABLE ledger (id int PRIMARY KEY)"))
    _leave_prepared(postgres_url, "batch-7", "INSERT INTO ledger VALUES (7)")
    # A different connection sees the transaction in doubt, and nothing of its effect yet.
    with engine.connect() as conn:
        assert "batch-7" in conn.recover_twophase()
        assert conn.execute(text("SELECT count(*) FROM ledger")).scalar_one() == 0
        conn.commit_prepared("batch-7", recover=True)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT id FROM ledger")).scalars().all() == [7]
        assert conn.recover_twophase() == []
    engine.dispose()


def test_each_test_gets_its_own_database(postgres_server: PostgresDatabases) -> None:
    first, second = postgres_server.create_database(), postgres_server.create_database()
    try:
        assert make_url(first).database != make_url(second).database
        with create_engine(first).begin() as conn:
            conn.execute(text("CREATE TABLE only_here (x int)"))
        engine = create_engine(second)
        with engine.connect() as conn:
            tables = conn.execute(text("SELECT tablename FROM pg_tables"))
            assert "only_here" not in tables.scalars().all()
        engine.dispose()
    finally:
        for url in (first, second):
            postgres_server.drop_database(str(make_url(url).database))


def test_drop_database_rolls_back_leftover_prepared_transactions(
    postgres_server: PostgresDatabases,
) -> None:
    url = postgres_server.create_database()
    name = str(make_url(url).database)
    _leave_prepared(url, "left-in-doubt", "CREATE TABLE t (x int)")

    admin = create_engine(postgres_server.url)
    with admin.connect() as conn:
        assert conn.execute(
            text("SELECT count(*) FROM pg_prepared_xacts WHERE gid = 'left-in-doubt'")
        ).scalar_one() == 1
    admin.dispose()

    postgres_server.drop_database(name)

    admin = create_engine(postgres_server.url)
    with admin.connect() as conn:
        assert conn.execute(
            text("SELECT count(*) FROM pg_database WHERE datname = :n"), {"n": name}
        ).scalar_one() == 0
        assert conn.execute(
            text("SELECT count(*) FROM pg_prepared_xacts WHERE gid = 'left-in-doubt'")
        ).scalar_one() == 0
    admin.dispose()


def test_existing_server_url_from_environment(
    postgres_server: PostgresDatabases, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(POSTGRES_URL_ENV, postgres_server.url)
    with postgres_for_tests() as server:
        assert not isinstance(server, PostgresServer)
        url = server.create_database()
        engine = create_engine(url)
        with engine.connect() as conn:
            current = conn.execute(text("SELECT current_database()")).scalar_one()
        assert current == make_url(url).database
        engine.dispose()
        server.drop_database(str(make_url(url).database))


def test_server_stops_and_removes_its_data() -> None:
    with PostgresServer(max_prepared_transactions=5) as server:
        data_dir = server.log_file.parent
        engine = create_engine(server.url)
        with engine.connect() as conn:
            assert conn.execute(text("SHOW max_prepared_transactions")).scalar_one() == "5"
            assert conn.execute(text("SHOW fsync")).scalar_one() == "off"
        engine.dispose()
        assert data_dir.is_dir()
    assert not data_dir.exists()
    with pytest.raises(RuntimeError, match="not running"):
        _ = server.url


def test_missing_binaries_are_named(tmp_path: Path) -> None:
    with pytest.raises(PostgresNotFoundError, match=str(tmp_path)):
        PostgresServer(tmp_path).start()


def test_rejects_disabled_two_phase_commit() -> None:
    with pytest.raises(ValueError, match="max_prepared_transactions"):
        PostgresServer(max_prepared_transactions=0)


def test_a_durable_server_killed_and_restarted_keeps_what_it_acknowledged() -> None:
    with PostgresServer(durable=True) as server:
        url, port = server.url, server.port
        engine = create_engine(url)
        with engine.begin() as conn:
            assert conn.execute(text("SHOW fsync")).scalar_one() == "on"
            assert conn.execute(text("SHOW synchronous_commit")).scalar_one() == "on"
            assert conn.execute(text("SHOW full_page_writes")).scalar_one() == "on"
            conn.execute(text("CREATE TABLE acknowledged (x int)"))
            conn.execute(text("INSERT INTO acknowledged VALUES (1)"))
        engine.dispose()
        _leave_prepared(url, "in-doubt", "INSERT INTO acknowledged VALUES (2)")

        server.kill()
        assert server.killed
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(host="127.0.0.1", port=port, user="postgres", connect_timeout=5)
        server.restart()

        assert (server.url, server.port, server.killed) == (url, port, False)
        engine = create_engine(url)
        with engine.connect() as conn:
            assert conn.execute(text("SELECT x FROM acknowledged")).scalars().all() == [1]
            assert conn.recover_twophase() == ["in-doubt"]
            conn.commit_prepared("in-doubt", recover=True)
            assert sorted(conn.execute(text("SELECT x FROM acknowledged")).scalars()) == [1, 2]
        engine.dispose()
        # Killed a second time, the server still stops and removes its data.
        server.kill()
        data_dir = server.log_file.parent
    assert not data_dir.exists()


def test_kill_and_restart_refuse_the_wrong_state() -> None:
    with PostgresServer() as server:
        with pytest.raises(RuntimeError, match="kill"):
            server.restart()
        server.kill()
        with pytest.raises(RuntimeError, match="not running"):
            server.kill()
        server.restart()
