"""SQLAlchemy engines for the URLs users give the SQL sinks and dead-letter stores."""

from __future__ import annotations

from typing import Any

from kafka_share_eos._libs import sa

SQLITE_BUSY_TIMEOUT_S = 60.0
"""How long a SQLite writer waits for another's write lock unless the URL sets ``timeout``."""


def create_sql_engine(url: str, **kwargs: Any) -> sa.Engine:
    """An engine for ``url`` (keyword arguments go to :func:`sqlalchemy.create_engine`).

    SQLite lets one connection write at a time, and pysqlite gives up after 5 s: a batch of one
    application (or executor task) then fails with "database is locked" while another holds
    its transaction open a little longer, where PostgreSQL would wait for the row lock. So a
    SQLite URL without ``?timeout=`` waits :data:`SQLITE_BUSY_TIMEOUT_S`.
    """
    parsed = sa.make_url(url)
    if parsed.get_backend_name() == "sqlite" and "timeout" not in parsed.query:
        connect_args = {"timeout": SQLITE_BUSY_TIMEOUT_S, **kwargs.pop("connect_args", {})}
        kwargs["connect_args"] = connect_args
    return sa.create_engine(parsed, **kwargs)
