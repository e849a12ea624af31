"""What cannot work in a Spark Connect session is refused when the query starts, saying why and
what to do instead, never at a later batch: a strategy or dead-letter sink on an in-memory
SQLite database, whose copy on the server would write to an empty database of its own. (A
server on another Python than the client's: test_connect_python_versions.py.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
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
    stream = share_stream(connect_spark, share_topic, tmp_path / "journal")

    # The server's foreachBatch worker unpickles the strategy while the query starts.
    with pytest.raises(Exception, match=r"ConfigurationError: an in-memory SQLite database "
                                        r"cannot be used from another process(.|\n)*SQLite file"):
        (stream.writeStream.foreachBatch(sink)
         .option("checkpointLocation", str(tmp_path / "checkpoint")).start())
    assert connect_spark.streams.active == []
