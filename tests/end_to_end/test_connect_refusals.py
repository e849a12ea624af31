"""What cannot work in a Spark Connect session is refused when the query starts, saying why and
what to do instead, never at a later batch: a strategy or dead-letter sink on an in-memory
SQLite database (the server's copy would write to an empty database of its own), and a server
whose Python is another version than the client's (PySpark names both)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.other_python import OtherPythonServer, other_python
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


def test_a_server_on_another_python_is_refused_at_start_naming_both_versions(
    share_topic: ShareTopic, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    import kafka_share_eos

    python, version = other_python()
    mine = f"{sys.version_info[0]}.{sys.version_info[1]}"
    for name in ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE", "SPARK_LOCAL_REMOTE"):
        monkeypatch.delenv(name, raising=False)
    with OtherPythonServer(python) as server:
        spark = server.session()
        kafka_share_eos.register(spark)
        stream = share_stream(spark, share_topic, tmp_path / "journal")
        sink = IdempotentUpsertSink.sql(f"sqlite:///{tmp_path / 'target.db'}", "events",
                                        create_table=True)
        with pytest.raises(Exception, match="PYTHON_VERSION_MISMATCH") as refused:
            (stream.writeStream.foreachBatch(sink)
             .option("checkpointLocation", str(tmp_path / "checkpoint")).start())
        assert f"different version: {version} than that in driver: {mine}" in str(refused.value)
        assert spark.streams.active == []
        assert not (tmp_path / "target.db").exists()
        spark.stop()
