"""CheckpointDedupStore on real tables, its ledger in Delta and in Iceberg (pyiceberg's SQL
catalog on SQLite), its sink a Delta table: redeliveries, replays, identities, reports."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from helpers.ledgers import LEDGER_BACKENDS, delta_rows, ledger_spec, opened_ledger, records

from kafka_share_eos.errors import AppIdConflictError
from kafka_share_eos.ledger.iceberg_ledger import IcebergLedger
from kafka_share_eos.sinks.delta_append import DeltaAppendSink
from kafka_share_eos.strategies import MissingColumnsError, SinkConfigurationError
from kafka_share_eos.strategies.checkpoint_dedup import CheckpointDedupStore

pytestmark = pytest.mark.timeout(120)


Paths = tuple[str | IcebergLedger, str]


@pytest.fixture(params=LEDGER_BACKENDS)
def paths(request: pytest.FixtureRequest, tmp_path: Path) -> Paths:
    """The store's ``ledger=`` and the Delta sink's path."""
    return opened_ledger(ledger_spec(request, tmp_path, request.param)), str(tmp_path / "sink")


def test_redeliveries_in_later_batches_reach_the_sink_once(paths: Paths) -> None:
    ledger, sink = paths
    store = CheckpointDedupStore(ledger, DeltaAppendSink(sink))
    first = store.apply(records(("t", 0, 0), ("t", 0, 1), ("t", 1, 0)), 0)
    # offsets 0/1 and 1/0 come back (lock expiry), together with new records and an in-batch twin
    second = store.apply(
        records(("t", 0, 1), ("t", 1, 0), ("t", 0, 2), ("t", 1, 1), ("t", 1, 1)), 1
    )
    third = store.apply(records(("t", 0, 0), ("t", 0, 2)), 2)

    assert delta_rows(sink) == [("t", 0, 0), ("t", 0, 1), ("t", 0, 2), ("t", 1, 0), ("t", 1, 1)]
    assert (first.rows_written, first.duplicates) == (3, 0)
    assert (second.rows_in, second.duplicates_in_batch, second.already_applied) == (5, 1, 2)
    assert second.rows_written == 2
    assert (third.rows_written, third.already_applied) == (0, 2)
    assert store.totals.rows_written == 5


def test_a_replayed_batch_is_a_no_op_even_on_a_fresh_store(paths: Paths) -> None:
    ledger, sink = paths
    batch = records(("t", 0, 5), ("t", 0, 6))
    CheckpointDedupStore(ledger, DeltaAppendSink(sink)).apply(batch, 7)
    replay = CheckpointDedupStore(ledger, DeltaAppendSink(sink)).apply(batch, 7)

    assert replay.write_path == "sink-skipped-batch"
    assert (replay.rows_written, replay.already_applied) == (0, 2)
    assert delta_rows(sink) == [("t", 0, 5), ("t", 0, 6)]


def test_an_older_batch_id_under_the_same_app_id_is_refused_not_dropped(
    paths: Paths,
) -> None:
    ledger, sink = paths
    CheckpointDedupStore(ledger, DeltaAppendSink(sink)).apply(records(("t", 0, 5)), 7)
    # a new checkpoint restarting at batch 3 under the same app_id would skip its records
    with pytest.raises(AppIdConflictError, match="same app_id"):
        CheckpointDedupStore(ledger, DeltaAppendSink(sink)).apply(records(("t", 0, 9)), 3)
    assert delta_rows(sink) == [("t", 0, 5)]


def test_only_new_rows_reach_the_sink_in_batch_order(paths: Paths) -> None:
    ledger, _ = paths
    seen: list[pa.Table] = []
    store = CheckpointDedupStore(ledger, lambda table, batch_id: seen.append(table))
    store.apply(records(("a", 0, 3), ("a", 0, 1)), 0)
    store.apply(records(("a", 0, 9), ("a", 0, 1), ("a", 0, 4), ("a", 0, 3), ("a", 0, 2)), 1)
    store.apply(records(("a", 0, 1), ("a", 0, 4)), 2)

    assert [t.column("offset").to_pylist() for t in seen] == [[3, 1], [9, 4, 2]]
    assert seen[1].column("value").to_pylist() == ["a/0/9", "a/0/4", "a/0/2"]


def test_business_key_identity(paths: Paths) -> None:
    ledger, sink = paths
    store = CheckpointDedupStore(ledger, DeltaAppendSink(sink), key_columns=["order_id"])
    batch = pa.table({"order_id": ["o1", "o2", "o1"], "amount": [10, 20, 11]})
    store.apply(batch, 0)
    # the producer resent o2 under a new offset: the business key catches it
    report = store.apply(pa.table({"order_id": ["o2", "o3"], "amount": [20, 30]}), 1)

    assert delta_rows(sink, ["order_id", "amount"]) == [("o1", 10), ("o2", 20), ("o3", 30)]
    assert (report.already_applied, report.rows_written) == (1, 1)


def test_identity_types_from_pandas_and_spark_share_one_ledger(paths: Paths) -> None:
    ledger, sink = paths
    store = CheckpointDedupStore(ledger, DeltaAppendSink(sink, columns=["topic", "offset"]))
    store.apply(records(("t", 0, 1)), 0)
    wide = pa.table({"topic": ["t", "t"], "partition": [0, 0], "offset": [1, 2]})  # int64 partition
    report = store.apply(wide, 1)

    assert (report.already_applied, report.rows_written) == (1, 1)
    assert delta_rows(sink, ["topic", "offset"]) == [("t", 1), ("t", 2)]


def test_missing_identity_column_is_named(paths: Paths) -> None:
    ledger, sink = paths
    store = CheckpointDedupStore(ledger, DeltaAppendSink(sink))
    with pytest.raises(MissingColumnsError, match="offset"):
        store.apply(pa.table({"topic": ["t"], "partition": [0]}), 0)


def test_key_columns_must_match_the_existing_ledger(paths: Paths) -> None:
    ledger, sink = paths
    CheckpointDedupStore(ledger, DeltaAppendSink(sink)).apply(records(("t", 0, 0)), 0)
    other = CheckpointDedupStore(ledger, DeltaAppendSink(sink), key_columns=["value"])
    with pytest.raises(SinkConfigurationError, match=r"key_columns \['value'\]"):
        other.apply(records(("t", 0, 1)), 1)


def test_sink_columns_are_checked(paths: Paths) -> None:
    ledger, sink = paths
    store = CheckpointDedupStore(ledger, DeltaAppendSink(sink, columns=["nope"]))
    with pytest.raises(MissingColumnsError, match="nope"):
        store.apply(records(("t", 0, 0)), 0)


def test_bad_options_are_named(paths: Paths) -> None:
    ledger, _ = paths
    with pytest.raises(SinkConfigurationError, match="prune_every"):
        CheckpointDedupStore(ledger, print, prune_every=0)
    with pytest.raises(SinkConfigurationError, match="sink must be callable"):
        CheckpointDedupStore(ledger, "not a sink")  # type: ignore[arg-type]
