"""The record identity of every strategy, without Spark: options, columns, deduplication."""

from __future__ import annotations

import pyarrow as pa
import pytest

from kafka_share_eos.strategies import (
    SOURCE_IDENTITY,
    MissingColumnsError,
    RecordIdentity,
    SinkConfigurationError,
)

pytestmark = pytest.mark.timeout(60)


def test_default_identity_keeps_first_delivery_in_batch_order() -> None:
    table = pa.table(
        {
            "topic": ["t"] * 5,
            "partition": [0, 1, 0, 0, 1],
            "offset": [7, 7, 8, 7, 7],
            "deliveryCount": [1, 1, 1, 2, 3],
        }
    )
    unique = RecordIdentity().deduplicate(table)
    assert unique.to_pylist() == [
        {"topic": "t", "partition": 0, "offset": 7, "deliveryCount": 1},
        {"topic": "t", "partition": 1, "offset": 7, "deliveryCount": 1},
        {"topic": "t", "partition": 0, "offset": 8, "deliveryCount": 1},
    ]


def test_identity_options() -> None:
    assert RecordIdentity.of().key_columns == SOURCE_IDENTITY
    assert RecordIdentity.of("account", "seq") == RecordIdentity(("account",), "seq")
    assert RecordIdentity.of(["a", "b"]).required_columns == ("a", "b")
    with pytest.raises(SinkConfigurationError, match="at least one"):
        RecordIdentity(())
    with pytest.raises(SinkConfigurationError, match="repeats"):
        RecordIdentity(("a", "a"))


def test_missing_columns_are_named() -> None:
    with pytest.raises(MissingColumnsError) as error:
        RecordIdentity(("account", "region"), "seq").check_columns(["account", "x"], "batch")
    assert error.value.missing == ("region", "seq")
    assert "batch lacks column(s) ['region', 'seq']; available columns: ['account', 'x']" in str(
        error.value
    )
