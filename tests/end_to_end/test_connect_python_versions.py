"""A Spark Connect client and a server whose Python workers run another minor version of
Python: the client pickles the ``kafka-share`` source and the strategy, and PySpark refuses the
query when it starts, naming both versions, before any record is read or written.

The server's workers need no PySpark of their own for that: Spark puts its ``pyspark.zip`` on
their path, and the worker that creates the data source compares the versions first.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.other_python import OtherPythonServer, other_python
from helpers.streaming import share_stream

from kafka_share_eos import IdempotentUpsertSink
from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic

pytestmark = [pytest.mark.connect, pytest.mark.timeout(300)]

@pytest.fixture(scope="module")
def spark_connect_server() -> Iterator[OtherPythonServer]:
    """The ``connect_spark`` fixture's server, for this module: workers on another Python."""
    with OtherPythonServer(other_python()[0]) as server:
        yield server


def test_a_server_on_another_python_is_refused_at_start_naming_both_versions(
    connect_spark: Any, share_topic: ShareTopic, tmp_path: Path,
) -> None:
    mine = f"{sys.version_info[0]}.{sys.version_info[1]}"
    stream = share_stream(connect_spark, share_topic, tmp_path / "journal")
    sink = IdempotentUpsertSink.sql(f"sqlite:///{tmp_path / 'target.db'}", "events",
                                    create_table=True)

    with pytest.raises(Exception, match="PYTHON_VERSION_MISMATCH") as refused:
        (stream.writeStream.foreachBatch(sink)
         .option("checkpointLocation", str(tmp_path / "checkpoint")).start())

    other = other_python()[1]
    assert f"different version: {other} than that in driver: {mine}" in str(refused.value)
    assert connect_spark.streams.active == []
    assert not (tmp_path / "target.db").exists()
