"""The client-only environment of ``pyspark-client``, the pure-Python Spark Connect client: it
holds the toolkit's core requirements but no PySpark of its own, and the README's pipeline run
from it on a Connect server writes every record once. Which client and server releases work
together is proven here: pyspark-client 4.2 on the main environment's server (PySpark 4.3) and
on the delta-spark tier's (PySpark 4.2), and the main environment's PySpark 4.3 as the client of
the tier's 4.2 server."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from helpers import produce
from helpers.client_runs import run_client, table_offsets

from kafka_share_eos.proving_ground.launchers.pyspark_client import (
    client_python,
    client_requirements,
)

if TYPE_CHECKING:
    from kafka_share_eos.proving_ground.broker import ShareTopic
    from kafka_share_eos.proving_ground.launchers.spark_connect import SparkConnectServer

ROOT = Path(__file__).resolve().parents[3]
# ./dev builds it before the delta-spark tier runs; its PySpark is the newest release.
MAIN_PYTHON = ROOT / ".venv" / "bin" / "python"


def test_the_client_environment_needs_the_core_and_sqlalchemy_but_no_pyspark() -> None:
    names = {requirement.split(">")[0].split("=")[0].split("[")[0].strip().lower()
             for requirement in client_requirements()}
    assert {"confluent-kafka", "pyarrow", "sqlalchemy"} <= names
    assert not {"pyspark", "psycopg", "deltalake"} & names


@pytest.mark.connect
@pytest.mark.older_pyspark
@pytest.mark.timeout(900)  # the first build of the environment fetches its packages
def test_pyspark_client_runs_the_readme_pipeline_exactly_once(
    spark_connect_server: SparkConnectServer, share_topic: ShareTopic, tmp_path: Path
) -> None:
    produce(share_topic.bootstrap_servers, share_topic.topic,
            [b"order-%d" % i for i in range(120)], partitions=share_topic.partitions)
    python = client_python()

    report = run_client(spark_connect_server.url, share_topic, tmp_path, python=python)

    assert report["pyspark"] == "4.2.0"
    assert not list((python.parent.parent / "lib").glob("python*/site-packages/pyspark/jars"))
    assert table_offsets(tmp_path) == sorted(set(table_offsets(tmp_path)))
    assert len(table_offsets(tmp_path)) == 120
    assert not [command for command in report["children"] if "java" in command]


@pytest.mark.connect
# Only the delta-spark tier has a server of the older release to try the newer client on.
@pytest.mark.delta_spark
def test_the_newest_pyspark_is_a_client_of_the_older_server(
    spark_connect_server: SparkConnectServer, share_topic: ShareTopic, tmp_path: Path
) -> None:
    produce(share_topic.bootstrap_servers, share_topic.topic,
            [b"order-%d" % i for i in range(120)], partitions=share_topic.partitions)

    report = run_client(spark_connect_server.url, share_topic, tmp_path, python=MAIN_PYTHON)

    assert report["pyspark"].split(".")[:2] > report["server"].split(".")[:2]
    assert len(table_offsets(tmp_path)) == 120 == len(set(table_offsets(tmp_path)))
