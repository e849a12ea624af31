"""A Spark Connect client and a server whose Python workers run another minor version of
Python: ``register`` runs one row through the server's workers before the source exists, and
PySpark refuses it, naming both versions, before any query starts or any record is read.

The server's workers need no PySpark of their own for that: Spark puts its ``pyspark.zip`` on
their path, and the worker compares the versions first.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.other_python import OtherPythonServer, other_python
from helpers.streaming import share_stream

from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic

pytestmark = [pytest.mark.connect, pytest.mark.timeout(300)]

@pytest.fixture(scope="module")
def spark_connect_server() -> Iterator[OtherPythonServer]:
    """The ``connect_spark`` fixture's server, for this module: workers on another Python."""
    with OtherPythonServer(other_python()[0]) as server:
        yield server


def test_a_server_on_another_python_is_refused_at_register_naming_both_versions(
    connect_spark: Any, share_topic: ShareTopic, tmp_path: Path,
) -> None:
    mine = f"{sys.version_info[0]}.{sys.version_info[1]}"

    with pytest.raises(Exception, match="PYTHON_VERSION_MISMATCH") as refused:
        share_stream(connect_spark, share_topic, tmp_path / "journal")

    other = other_python()[1]
    assert f"different version: {other} than that in driver: {mine}" in str(refused.value)
    assert connect_spark.streams.active == []
    assert not (tmp_path / "journal").exists()
