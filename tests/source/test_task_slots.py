"""The one warning the source's planning logs when ``consumers`` exceeds the session's task
slots: in a classic local[2] session and in a pipeline's own Spark application, and the
session's settings carried to the source on Spark's workers."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from helpers.slots import options
from pyspark import cloudpickle

from kafka_share_eos import EmbeddedBroker
from kafka_share_eos.source.datasource import KafkaShareDataSource, with_session_settings
from kafka_share_eos.source.reader import KafkaShareStreamReader
from kafka_share_eos.spark_slots import session_settings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.timeout(300)

WARNING = "kafka-share source: 'consumers' is"


def planning_warnings(
    broker: EmbeddedBroker, tmp_path: Path, consumers: int, settings: dict[str, str] | None,
    caplog: pytest.LogCaptureFixture,
) -> list[str]:
    caplog.clear()
    opts = options(broker.bootstrap_servers, tmp_path / f"journal-{consumers}",
                   consumers=str(consumers))
    reader = KafkaShareStreamReader(opts, settings)
    with caplog.at_level(logging.WARNING, logger="kafka_share_eos.source"):
        reader.initialOffset()
        reader.partitions({"seq": 0}, {"seq": 0})  # the planning starts
    reader.stop()
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith(WARNING)]


@pytest.mark.spark
def test_the_planning_warns_once_when_consumers_exceed_a_local_2_session(
    spark: SparkSession, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = session_settings(spark)
    assert settings["spark.master"] == "local[2]"
    with EmbeddedBroker(topics=["jobs:4"]) as broker:
        [line] = planning_warnings(broker, tmp_path, 4, settings, caplog)
        assert "'consumers' is 4 but the session runs 2 tasks at once" in line
        assert "take turns" in line and "lock budget" in line
        assert planning_warnings(broker, tmp_path, 2, settings, caplog) == []
        assert planning_warnings(broker, tmp_path, 4, None, caplog) == []


def test_the_registered_source_carries_the_settings_to_spark_workers() -> None:
    registered = with_session_settings({"spark.master": "local[2]"})
    # Spark pickles the class it registers: by value here, so the settings travel with it.
    travelled: Any = cloudpickle.loads(cloudpickle.dumps(registered))
    assert travelled.session_settings == {"spark.master": "local[2]"}
    assert issubclass(travelled, KafkaShareDataSource) and travelled.name() == "kafka-share"
    assert KafkaShareDataSource.session_settings is None


PIPELINE = """
import sys
import kafka_share_eos
from kafka_share_eos.proving_ground.launchers.spark import local_spark_session
from kafka_share_eos.proving_ground.streams import share_stream, source_options

bootstrap, work = sys.argv[1], sys.argv[2]
spark = local_spark_session(cores=2, short_lived=True)
kafka_share_eos.register(spark)
for consumers in (4, 2):
    print(f"query with consumers={consumers}", file=sys.stderr, flush=True)
    df = share_stream(spark, source_options(
        bootstrap, f"g{consumers}", "jobs", f"{work}/journal-{consumers}",
        consumers=str(consumers), pollTimeoutMs="200", availableNowIdleMs="300"))
    (df.writeStream.format("noop").trigger(availableNow=True)
     .option("checkpointLocation", f"{work}/cp-{consumers}").start().awaitTermination())
print("queries done", file=sys.stderr, flush=True)
spark.stop()
"""


@pytest.mark.spark
@pytest.mark.full
def test_a_pipelines_spark_logs_the_warning_from_its_source_runner(tmp_path: Path) -> None:
    script = tmp_path / "pipeline.py"
    script.write_text(textwrap.dedent(PIPELINE))
    with EmbeddedBroker(topics=["jobs:4"]) as broker:
        run = subprocess.run([sys.executable, str(script), broker.bootstrap_servers,
                              str(tmp_path)], capture_output=True, text=True, timeout=240,
                             check=False)
    assert run.returncode == 0, run.stderr[-3000:]
    four, two = run.stderr.split("query with consumers=2")
    assert four.count(WARNING) == 1, four[-3000:]
    assert "'consumers' is 4 but the session runs 2 tasks at once" in four
    assert WARNING not in two
