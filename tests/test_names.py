"""One name given where several are expected is one name, never its letters."""

from __future__ import annotations

from pathlib import Path

from kafka_share_eos import DeltaAppendSink, RecordIdentity
from kafka_share_eos._names import names


def test_a_string_is_one_name_and_any_other_iterable_its_names() -> None:
    assert names("orders") == ["orders"]
    assert names(("a", "b")) == ["a", "b"]
    assert names(iter(["x"])) == ["x"]


def test_sinks_and_identities_take_one_column_given_alone(tmp_path: Path) -> None:
    sink = DeltaAppendSink(str(tmp_path / "sink"), partition_by="topic", columns="offset")
    assert (sink.partition_by, sink.columns) == (["topic"], ["offset"])
    assert RecordIdentity.of("order_id").key_columns == ("order_id",)
