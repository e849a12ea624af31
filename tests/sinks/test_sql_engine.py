"""SQLAlchemy engines for the SQL sinks' URLs: what a SQLite URL says is kept."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.timeout(180)


def test_a_sqlite_url_timeout_is_kept() -> None:
    from kafka_share_eos.sinks.sql_engine import SQLITE_BUSY_TIMEOUT_S, create_sql_engine

    cases = [("sqlite://", SQLITE_BUSY_TIMEOUT_S * 1000), ("sqlite://?timeout=2", 2000)]
    for url, busy_ms in cases:
        engine = create_sql_engine(url)
        with engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == busy_ms
        engine.dispose()
