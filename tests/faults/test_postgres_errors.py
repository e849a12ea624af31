"""Every writer of PostgreSQL meets a lost connection with one error: DatabaseUnavailableError,
naming the operation and the database without its password; written again once the database is
back, the data lands once.

Each writer reaches the server through a Toxiproxy proxy and a URL with a password (the test
server trusts every local connection, so the password is only there to be hidden); the proxy
closes every connection and refuses new ones while cut.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest
import sqlalchemy as sa
from helpers import upsert_rows

from kafka_share_eos import DatabaseUnavailableError, DatabaseUnreachableError
from kafka_share_eos.deadletter import SqlDeadLetters
from kafka_share_eos.deadletter.letters import DEAD_LETTER_SCHEMA
from kafka_share_eos.proving_ground.launchers.toxiproxy import Proxy, Toxiproxy
from kafka_share_eos.sinks.sql import SqlUpsertWriter
from kafka_share_eos.strategies import IdempotentUpsertSink
from kafka_share_eos.twophase import Decision, Outcome
from kafka_share_eos.twophase.postgres_log import PostgresDecisionLog

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(120)]

PASSWORD = "kse-hidden-0815"


@pytest.fixture
def proxy(postgres_url: str, toxiproxy: Toxiproxy) -> Iterator[Proxy]:
    port = sa.make_url(postgres_url).port
    assert port is not None
    forwarder = toxiproxy.proxy(f"127.0.0.1:{port}")
    yield forwarder
    forwarder.delete()


@pytest.fixture
def proxied_url(postgres_url: str, proxy: Proxy) -> str:
    return sa.make_url(postgres_url).set(password=PASSWORD, port=proxy.port).render_as_string(
        hide_password=False
    )


def assert_names_database(error: pytest.ExceptionInfo[DatabaseUnavailableError], url: str,
                          operation: str) -> None:
    message = str(error.value)
    assert operation in message
    assert sa.make_url(url).render_as_string(hide_password=True) in message
    assert PASSWORD not in message
    assert "restart the query on the same checkpoint" in message
    assert isinstance(error.value, ConnectionError)


def rows(start: int, stop: int) -> pa.Table:
    ids = list(range(start, stop))
    return pa.table({"id": pa.array(ids, pa.int64()), "v": pa.array([i * 10 for i in ids])})


@pytest.mark.parametrize("count", [5, 150], ids=["rows", "copy"])
def test_upsert_of_a_batch_when_the_connection_is_cut(
    postgres_url: str, proxied_url: str, proxy: Proxy, count: int
) -> None:
    writer = SqlUpsertWriter(proxied_url, "t", key_columns=["id"], create_table=True)
    writer.upsert(rows(0, 3), 0)
    proxy.cut("refuse")
    with pytest.raises(DatabaseUnavailableError) as error:
        writer.upsert(rows(0, count), 1)
    assert_names_database(error, proxied_url, "upsert of batch 1 into 'postgresql:t'")
    # The pooled connection was open: what it had sent is unknown, not "never connected".
    assert not isinstance(error.value, DatabaseUnreachableError)
    assert "was lost" in str(error.value)
    assert "may or may not have taken effect" in str(error.value)
    proxy.heal()
    outcome = writer.upsert(rows(0, count), 1)
    assert (outcome.written, outcome.path) == (count - 3, "copy" if count >= 100 else "rows")
    writer.close()
    engine = sa.create_engine(postgres_url)
    with engine.connect() as conn:
        stored = conn.execute(sa.text("SELECT id, v FROM t ORDER BY id")).all()
    engine.dispose()
    assert [tuple(r) for r in stored] == [(i, i * 10) for i in range(count)]


@pytest.mark.spark
def test_executor_writes_when_the_connection_is_cut(
    spark: SparkSession, postgres_url: str, proxied_url: str, proxy: Proxy
) -> None:
    """The executors' transactions meet the same error (inside Spark's task failure); the batch
    written again once the database is back lands once."""
    sink = IdempotentUpsertSink.sql(proxied_url, "events", create_table=True,
                                    write_path="executors")
    pairs = [(p, o) for p in range(3) for o in range(40)]
    sink(spark.createDataFrame(upsert_rows.records(pairs[:60])), 0)
    df = spark.createDataFrame(upsert_rows.records(pairs)).repartition(4)
    proxy.cut("refuse")
    # Each task's copy of the writer opens the table first, on a connection of its own that
    # the cut proxy refuses: it never opened.
    with pytest.raises(Exception, match="DatabaseUnreachableError: opening table 'postgresql:ev"
                       ) as error:
        sink(df, 1)
    assert sa.make_url(proxied_url).render_as_string(hide_password=True) in str(error.value)
    assert PASSWORD not in str(error.value)
    proxy.heal()
    report = sink(df, 1)
    assert (report.write_path, report.already_applied, report.rows_written) == (
        "executors", 60, 60
    )
    assert upsert_rows.sql_identities(postgres_url) == sorted(
        ("t", p, o, f"{p}:{o}".encode()) for p, o in pairs
    )
    sink.close()


def test_a_refused_connection_names_the_table_being_opened(
    proxied_url: str, proxy: Proxy
) -> None:
    proxy.cut("refuse")
    writer = SqlUpsertWriter(proxied_url, "t", key_columns=["id"], create_table=True)
    with pytest.raises(DatabaseUnreachableError) as error:
        writer.upsert(rows(0, 3), 0)
    assert_names_database(error, proxied_url, "opening table 'postgresql:t'")
    assert "never opened, so nothing of it reached the database" in str(error.value)
    assert "may or may not" not in str(error.value)


def test_a_blackholed_database_fails_a_new_connection_after_connect_timeout(
    proxied_url: str, proxy: Proxy
) -> None:
    """Nothing answers (a partition that drops every packet): libpq's ``connect_timeout`` in
    the URL bounds the wait, and the batch fails naming the database instead of hanging."""
    url = sa.make_url(proxied_url).update_query_dict({"connect_timeout": "2"})
    writer = SqlUpsertWriter(url.render_as_string(hide_password=False), "t", key_columns=["id"],
                             create_table=True)
    proxy.cut("blackhole")
    with pytest.raises(DatabaseUnavailableError, match="timeout expired") as error:
        writer.upsert(rows(0, 3), 0)
    assert_names_database(error, proxied_url, "opening table 'postgresql:t'")
    proxy.heal()
    assert writer.upsert(rows(0, 3), 0).written == 3
    writer.close()


def test_decision_log_when_the_connection_is_cut(proxied_url: str, proxy: Proxy) -> None:
    log = PostgresDecisionLog(proxied_url)
    decision = Decision("kse:app:1:abc", 1, Outcome.COMMIT, ())
    proxy.cut("refuse")
    with pytest.raises(DatabaseUnavailableError) as error:
        log.write(decision)
    assert_names_database(error, proxied_url, "writing the decision of 'kse:app:1:abc'")
    proxy.heal()
    assert log.write(decision).outcome is Outcome.COMMIT
    assert log.txids("kse:app:") == ["kse:app:1:abc"]


def test_dead_letters_written_again_after_a_cut_land_once(
    proxied_url: str, proxy: Proxy
) -> None:
    letters = SqlDeadLetters(proxied_url)
    batch = pa.Table.from_pylist([_letter(i) for i in range(4)], schema=DEAD_LETTER_SCHEMA)
    proxy.cut("refuse")
    with pytest.raises(DatabaseUnavailableError) as error:
        letters.write(batch)
    assert_names_database(error, proxied_url, "writing dead letters to")
    proxy.heal()
    letters.write(batch)
    letters.write(batch)
    assert letters.count() == 4
    letters.close()


def test_an_operational_error_of_a_live_connection_passes_unchanged(
    postgres_url: str, proxied_url: str
) -> None:
    """A lock timeout is an OperationalError too, with the connection alive: not unavailable."""
    url = sa.make_url(proxied_url).update_query_dict({"options": "-c lock_timeout=200"})
    writer = SqlUpsertWriter(url.render_as_string(hide_password=False), "t", key_columns=["id"],
                             create_table=True)
    writer.upsert(rows(0, 3), 0)
    engine = sa.create_engine(postgres_url)
    with engine.begin() as locker:
        locker.execute(sa.text("LOCK TABLE t IN ACCESS EXCLUSIVE MODE"))
        with pytest.raises(sa.exc.OperationalError, match="lock timeout") as error:
            writer.upsert(rows(3, 6), 1)
    assert not isinstance(error.value, DatabaseUnavailableError)
    engine.dispose()
    writer.close()


def _letter(number: int) -> dict[str, object]:
    return {
        "letter_id": f"letter-{number}", "topic": "t", "partition": 0, "offset": number,
        "delivery_count": 1, "key": None, "value": b"v", "row": None, "stage": "apply",
        "error_type": "ValueError", "error": "bad", "strategy": "test", "batch_id": 1,
        "dead_lettered_at": datetime.now(UTC),
    }
