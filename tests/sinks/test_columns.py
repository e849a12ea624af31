"""The columns a sink needs are checked on every batch: a batch that has them passes whatever
else it holds, one that lacks some is refused naming them and the columns it has (no target)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from kafka_share_eos.errors import MissingColumnsError, SinkConfigurationError
from kafka_share_eos.sinks.columns import require_columns

BATCH = pa.table({"id": [1, 2], "version": [3, 4], "amount": [5.0, 6.0]})


def test_a_batch_with_every_column_needed_passes() -> None:
    require_columns(BATCH, ["id", "version"], "batch 1")
    require_columns(BATCH, [], "batch 1")
    require_columns(BATCH.slice(0, 0), ["amount"], "an empty batch")


def test_a_batch_lacking_columns_is_refused_naming_them_and_those_it_has() -> None:
    with pytest.raises(MissingColumnsError) as refused:
        require_columns(BATCH, ["id", "tenant", "version", "region"], "batch 7 of orders")
    assert refused.value.missing == ("tenant", "region")
    assert refused.value.available == ("id", "version", "amount")
    assert refused.value.where == "batch 7 of orders"
    assert str(refused.value) == (
        "batch 7 of orders lacks column(s) ['tenant', 'region']; available columns: "
        "['id', 'version', 'amount']")
    assert isinstance(refused.value, SinkConfigurationError)


def test_column_names_are_matched_exactly() -> None:
    with pytest.raises(MissingColumnsError) as refused:
        require_columns(BATCH, ["ID", "Version"], "batch 2")
    assert refused.value.missing == ("ID", "Version")
