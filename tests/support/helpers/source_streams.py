"""Shared by the tests of the kafka-share source on local Spark: a share stream that ends its
drain after two idle seconds unless told otherwise."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from helpers.streaming import share_stream
from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def stream(spark: SparkSession, topic: ShareTopic, journal: Path, **extra: str) -> DataFrame:
    return share_stream(spark, topic, journal, **{"availableNowIdleMs": "2000", **extra})
