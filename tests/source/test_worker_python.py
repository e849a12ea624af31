"""register() asks Spark's Python workers whether they import the toolkit, and names their
interpreter and the settings choosing it when they do not."""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from kafka_share_eos.source.worker_python import require_toolkit_on_workers

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from kafka_share_eos.proving_ground.launchers.spark_connect import SparkConnectServer

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]

REGISTER = """
import sys
import kafka_share_eos
from kafka_share_eos.errors import ConfigurationError
from pyspark.sql import SparkSession

# A plain session: the tests' own launcher points the workers at this interpreter.
spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
try:
    kafka_share_eos.register(spark)
except ConfigurationError as error:
    print(error)
    sys.exit(3)
"""


def test_workers_with_the_toolkit_pass(spark: SparkSession) -> None:
    require_toolkit_on_workers(spark)


def test_workers_on_an_interpreter_without_the_toolkit_are_named_at_register(
    tmp_path: Path,
) -> None:
    bare = tmp_path / "bare"
    venv.create(bare, with_pip=False)
    interpreter = bare / "bin" / "python"
    result = subprocess.run(
        # Elsewhere than the repository, whose package folder the workers would find there.
        [sys.executable, "-c", REGISTER], capture_output=True, text=True, timeout=240,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "PYSPARK_PYTHON": str(interpreter),
             "HOME": str(Path.home())},
    )
    assert result.returncode == 3, result.stdout + result.stderr[-3000:]
    (message,) = result.stdout.strip().splitlines()
    assert message.startswith(f"Spark's Python workers run {interpreter} (Python ")
    assert "No module named 'kafka_share_eos'" in message
    assert "PYSPARK_PYTHON or spark.pyspark.python" in message
    assert sys.executable in message


@pytest.mark.connect
def test_a_connect_session_is_asked_while_another_is_the_active_one(
    connect_spark: Any, spark_connect_server: SparkConnectServer
) -> None:
    # Creating a session makes it the active one and stopping it leaves none: the probe must
    # use the session it is given, not the thread's active one.
    other = spark_connect_server.session()
    other.stop()

    require_toolkit_on_workers(connect_spark)
