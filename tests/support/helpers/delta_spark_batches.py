"""Source-shaped DataFrames for the delta-spark MERGE tests, and the offsets a Delta table holds."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
from deltalake import DeltaTable

from helpers.batches import source_rows

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def batch(spark: SparkSession, offsets: list[int], version: int = 1) -> DataFrame:
    return spark.createDataFrame(source_rows(
        topic="t", partition=0, offset=offsets, v=pa.array([version] * len(offsets), pa.int64())
    ))


def offsets(path: str) -> list[int]:
    return sorted(DeltaTable(path).to_pyarrow_table(columns=["offset"])["offset"].to_pylist())
