"""The kafka-share data source as Spark loads it: its schema and the options it refuses at
load (embedded broker, local Spark)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from helpers.source_streams import stream
from helpers.streaming import share_stream

from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.older_pyspark, pytest.mark.timeout(240)]


def test_headers_column_only_when_asked(
    spark: SparkSession, share_topic: ShareTopic, tmp_path: Path
) -> None:
    df = stream(spark, share_topic, tmp_path / "journal")
    assert "headers" not in df.columns
    assert df.columns[-1] == "deliveryCount"


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        ({"startingOffsets": "yesterday"}, "startingOffsets"),
        ({"kafka.group.id": "g"}, "kafka.share.group.id"),
        ({"maxRecordsPerTrigger": "many"}, "maxRecordsPerTrigger"),
        ({"acknowledge": "sometimes"}, "acknowledge"),
    ],
)
def test_bad_options_fail_at_load_naming_the_option(
    spark: SparkSession, share_topic: ShareTopic, tmp_path: Path, extra: dict[str, str],
    named: str,
) -> None:
    with pytest.raises(Exception, match=named):
        stream(spark, share_topic, tmp_path / "journal", **extra)


def test_missing_journal_path_fails_at_load(spark: SparkSession, share_topic: ShareTopic) -> None:
    with pytest.raises(Exception, match="journalPath"):
        share_stream(spark, share_topic, None)
