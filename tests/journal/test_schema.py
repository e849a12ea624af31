"""The rows the source journals and hands to Spark: the journal's schema is Spark's Kafka source
schema plus ``deliveryCount``, headers dropped on the way out when not asked for (no broker, no
Spark session)."""

from __future__ import annotations

import pyarrow as pa
import pytest
from helpers.messages import messages

from kafka_share_eos.journal.schema import arrow_schema, project
from kafka_share_eos.source.conversion import to_record_batch
from kafka_share_eos.source.datasource import spark_schema


@pytest.mark.parametrize("include_headers", [True, False])
def test_arrow_schema_is_what_spark_expects(include_headers: bool) -> None:
    from pyspark.sql.pandas.types import to_arrow_schema

    expected = to_arrow_schema(spark_schema(include_headers), timezone="UTC")
    assert arrow_schema(include_headers).equals(expected)
    projected = project(pa.Table.from_batches([to_record_batch(messages())]), include_headers)
    assert projected.schema.equals(expected)
