"""The streaming query a strategy's batches belong to: read from the batch's thread in a classic
session, and in a Spark Connect session found as the query the client's session gained since
the strategy was unpickled."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.strategies.streaming_query import ConnectQuery, streaming_query_id

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


class QueryIds:
    """A ``foreachBatch`` function noting the query id each batch reports."""

    def __init__(self) -> None:
        self.seen: list[str | None] = []

    def __call__(self, batch_df: DataFrame, batch_id: int) -> None:
        self.seen.append(streaming_query_id(batch_df))


def _rate_query(spark: Any, function: Any, checkpoint: Path) -> Any:
    return (spark.readStream.format("rate").option("rowsPerSecond", 10).load()
            .writeStream.foreachBatch(function).option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True).start())


@pytest.mark.spark
def test_a_classic_batch_names_its_query_and_a_static_dataframe_none(
    spark: SparkSession, tmp_path: Path
) -> None:
    ids = QueryIds()
    query = _rate_query(spark, ids, tmp_path / "checkpoint")
    query.awaitTermination()
    assert ids.seen and set(ids.seen) == {query.id}
    assert streaming_query_id(spark.range(3)) is None


def test_outside_a_connect_servers_worker_there_is_no_finder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SPARK_CONNECT_LOCAL_URL", raising=False)
    monkeypatch.setenv("SPARK_CONNECT_MODE_ENABLED", "1")
    assert ConnectQuery.of_worker() is None


@pytest.mark.connect
def test_in_connect_the_query_started_after_the_finder_is_its_own(
    connect_spark: Any, tmp_path: Path
) -> None:
    earlier = _rate_query(connect_spark, lambda df, batch_id: None, tmp_path / "earlier")
    earlier.awaitTermination()
    running = (connect_spark.readStream.format("rate").load().writeStream
               .foreachBatch(lambda df, batch_id: None)
               .option("checkpointLocation", str(tmp_path / "running")).start())
    try:
        finder = ConnectQuery(connect_spark)
        mine = (connect_spark.readStream.format("rate").load().writeStream
                .foreachBatch(lambda df, batch_id: None)
                .option("checkpointLocation", str(tmp_path / "mine")).start())
        try:
            assert finder.query_id() == mine.id
            assert finder.query_id() == mine.id  # kept for the rest of the run
        finally:
            mine.stop()
    finally:
        running.stop()
    assert streaming_query_id(connect_spark.range(3)) is None


@pytest.mark.connect
def test_in_connect_two_queries_started_together_are_refused_by_name(
    connect_spark: Any, tmp_path: Path
) -> None:
    finder = ConnectQuery(connect_spark)
    queries = [(connect_spark.readStream.format("rate").load().writeStream
                .foreachBatch(lambda df, batch_id: None)
                .option("checkpointLocation", str(tmp_path / name)).start())
               for name in ("a", "b")]
    try:
        with pytest.raises(ConfigurationError, match="started at the same moment") as refused:
            finder.query_id()
        assert all(query.id in str(refused.value) for query in queries)
    finally:
        for query in queries:
            query.stop()
