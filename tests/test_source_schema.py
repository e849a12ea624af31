"""The rows the source produces: Arrow conversion of polled messages and the Spark schema
(no broker, no Spark session)."""

from __future__ import annotations

import pyarrow as pa
import pytest
from helpers.messages import messages

from kafka_share_eos.source.datasource import spark_schema
from kafka_share_eos.source.schema import arrow_schema, project, to_record_batch


def test_record_batch_keeps_malformed_input_unchanged() -> None:
    rows = to_record_batch(messages()).to_pylist()
    assert [(r["key"], r["value"]) for r in rows] == [
        (b"k", b"v"), (None, b""), (b"", None), (b"big", b"x" * 1_000_000),
    ]
    assert [r["offset"] for r in rows] == [0, 1, 2, 3]
    assert {r["topic"] for r in rows} == {"orders"} and {r["partition"] for r in rows} == {3}
    assert [r["timestampType"] for r in rows] == [0, None, 1, 0]
    assert rows[0]["timestamp"].timestamp() == pytest.approx(1_700_000_000.123)
    assert rows[1]["timestamp"] is None
    assert rows[0]["headers"] == [{"key": "h", "value": b"1"}, {"key": "h", "value": None}]
    assert rows[1]["headers"] is None
    assert [r["deliveryCount"] for r in rows] == [1, 3, 1, 1]


@pytest.mark.parametrize("include_headers", [True, False])
def test_arrow_schema_is_what_spark_expects(include_headers: bool) -> None:
    from pyspark.sql.pandas.types import to_arrow_schema

    expected = to_arrow_schema(spark_schema(include_headers), timezone="UTC")
    assert arrow_schema(include_headers).equals(expected)
    projected = project(pa.Table.from_batches([to_record_batch(messages())]), include_headers)
    assert projected.schema.equals(expected)
