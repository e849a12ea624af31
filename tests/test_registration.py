"""``kafka_share_eos.register``: registered (twice, as a notebook rerun does) in a local Spark
session, the ``kafka-share`` format reads a share group to its end; without pyspark the call is
refused naming the extra."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from helpers import produce
from helpers.extras import without
from helpers.scripts import run_python
from helpers.streaming import Offsets, run_available_now

import kafka_share_eos
from kafka_share_eos.proving_ground import streams
from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic
from kafka_share_eos.registration import register

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.timeout(300)

RECORDS = 30


@pytest.mark.spark
def test_the_registered_format_reads_the_share_group_to_its_end(
    spark: SparkSession, share_topic: ShareTopic, tmp_path: Path
) -> None:
    written = produce(share_topic.bootstrap_servers, share_topic.topic,
                      (b"%d" % i for i in range(RECORDS)), partitions=share_topic.partitions)
    register(spark)
    register(spark)
    df = streams.share_stream(spark, streams.source_options(
        share_topic.bootstrap_servers, share_topic.group_id, share_topic.topic,
        tmp_path / "journal", availableNowIdleMs="2000"))
    assert df.isStreaming
    assert {"key", "value", "topic", "partition", "offset", "deliveryCount"} <= set(df.columns)
    seen = Offsets()
    run_available_now(df, tmp_path / "checkpoint", seen)
    assert sorted(seen.seen) == written
    assert set(seen.seen.values()) == {1}


def test_the_package_exports_this_register() -> None:
    assert kafka_share_eos.register is register


def test_without_pyspark_registering_is_refused_naming_the_extra() -> None:
    script = """
from kafka_share_eos.errors import MissingExtraError
from kafka_share_eos.registration import register
try:
    register(None)
except MissingExtraError as error:
    print(error.extra, error.name)
"""
    with tempfile.TemporaryDirectory(prefix="kse-registration-") as site:
        result = run_python("-c", script, env=without(["pyspark"], Path(site)))
    assert result.stdout.split() == ["spark", "pyspark"]
