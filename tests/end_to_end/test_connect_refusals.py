"""What cannot work in a Spark Connect session is refused when the query starts, saying why and
what to do instead, never at a later batch: a strategy or dead-letter sink on an in-memory
SQLite database, whose copy on the server would write to an empty database of its own; a
target the server's copy finds missing, checked while the query starts, before the source takes
any record. (A server on another Python than the client's: test_connect_python_versions.py.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from helpers import consume, count_at_least, produce, share_consumer
from helpers.streaming import share_stream

from kafka_share_eos import IdempotentUpsertSink, SqlDeadLetters
from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic

pytestmark = [pytest.mark.connect, pytest.mark.timeout(300)]


@pytest.mark.parametrize("where", ["target", pytest.param("dead letters", marks=pytest.mark.full)])
def test_an_in_memory_sqlite_database_is_refused_when_the_query_starts(
    where: str, connect_spark: Any, share_topic: ShareTopic, tmp_path: Path,
) -> None:
    if where == "target":
        sink = IdempotentUpsertSink.sql("sqlite://", "events", create_table=True)
    else:
        sink = IdempotentUpsertSink.sql(f"sqlite:///{tmp_path / 'target.db'}", "events",
                                        create_table=True,
                                        dead_letters=SqlDeadLetters("sqlite:///:memory:"))
    refused_at_start(connect_spark, share_topic, tmp_path, sink,
                     r"ConfigurationError: an in-memory SQLite database cannot be used from "
                     r"another process(.|\n)*SQLite file")


def refused_at_start(connect_spark: Any, share_topic: ShareTopic, tmp_path: Path, sink: Any,
                     pattern: str) -> list[str]:
    """Starting a query into ``sink`` fails with ``pattern``, and no query runs after; the
    lines of the error."""
    stream = share_stream(connect_spark, share_topic, tmp_path / "journal")
    # The server's foreachBatch worker unpickles the strategy while the query starts.
    with pytest.raises(Exception, match=pattern) as refused:
        (stream.writeStream.foreachBatch(sink)
         .option("checkpointLocation", str(tmp_path / "checkpoint")).start())
    assert connect_spark.streams.active == []
    return str(refused.value).splitlines()


def test_a_missing_table_is_refused_by_the_servers_copy_before_any_record_is_taken(
    connect_spark: Any, share_topic: ShareTopic, tmp_path: Path,
) -> None:
    """The client leaves the check to the server (``check_on_create=False``, as a client
    outside the cluster's network would): the server's copy checks while the query starts."""
    values = [b"r%d" % i for i in range(12)]
    produce(share_topic.bootstrap_servers, share_topic.topic, values,
            partitions=share_topic.partitions)
    database = tmp_path / "shop.db"
    engine = sa.create_engine(f"sqlite:///{database}")
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE other (id integer PRIMARY KEY)")
    engine.dispose()
    sink = IdempotentUpsertSink.sql(f"sqlite:///{database}", "events", check_on_create=False)
    lines = refused_at_start(connect_spark, share_topic, tmp_path, sink,
                             r"TargetTableError: table 'events' does not exist; create it .* "
                             r"or pass create_table=True")
    # Without the driver's chain of causes, the line comes before Spark's JVM stack.
    ours = next(i for i, line in enumerate(lines) if "TargetTableError: table" in line)
    jvm = lines.index("JVM stacktrace:") if "JVM stacktrace:" in lines else len(lines)
    assert ours < min(jvm, 25), lines[:30]
    with share_consumer(share_topic.bootstrap_servers, share_topic.group_id,
                        [share_topic.topic]) as consumer:
        got = consume(consumer, until=count_at_least(len(values)), timeout=60)
    assert sorted(d.value for d in got) == sorted(values)
    assert {d.delivery_count for d in got} == {1}
