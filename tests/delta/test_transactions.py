"""Delta application transactions on real tables: an append lands once per application id and
batch, in this process and any other; an empty batch still records its completion; a lower batch
of a recorded application is named as another application's; and a commit told not to rebase
fails on a moved table where the default one lands on top."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from deltalake.exceptions import CommitFailedError, SchemaMismatchError
from helpers.delta import read_delta

from kafka_share_eos.delta.handles import KeptTable
from kafka_share_eos.delta.transactions import (
    append_once,
    check_batch_order,
    commit_properties,
    committed_version,
)
from kafka_share_eos.errors import AppIdConflictError, ConfigurationError

pytestmark = pytest.mark.timeout(120)


def rows(first: int, count: int) -> pa.Table:
    return pa.table({
        "partition": pa.array([i % 2 for i in range(first, first + count)], pa.int32()),
        "offset": pa.array(range(first, first + count), pa.int64()),
    })


def offsets(path: str) -> list[int]:
    return read_delta(path, 'SELECT "offset" FROM t ORDER BY 1')["offset"].to_pylist()


def test_an_append_lands_once_per_app_id_and_batch(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    location = KeptTable(path)

    assert committed_version(location, "a") is None
    landed = [
        append_once(location, rows(0, 2), app_id="a", batch_id=0),
        append_once(location, rows(0, 2), app_id="a", batch_id=0),  # replayed
        append_once(location, rows(2, 2), app_id="a", batch_id=1),
        append_once(location, rows(9, 2), app_id="a", batch_id=0),  # below the recorded batch
        append_once(location, rows(4, 2), app_id="b", batch_id=0),
    ]

    assert landed == [True, False, True, False, True]
    assert offsets(path) == [0, 1, 2, 3, 4, 5]
    assert (committed_version(location, "a"), committed_version(location, "b")) == (1, 0)
    assert DeltaTable(path).transaction_version("a") == 1


def test_another_process_skips_the_batches_already_committed(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    append_once(KeptTable(path), rows(0, 2), app_id="a", batch_id=3)

    restarted = KeptTable(path)

    assert not append_once(restarted, rows(0, 2), app_id="a", batch_id=3)
    assert append_once(restarted, rows(2, 2), app_id="a", batch_id=4)
    assert offsets(path) == [0, 1, 2, 3]
    assert committed_version(KeptTable(path), "a") == 4


def test_the_first_append_creates_the_table_with_its_layout_and_an_empty_batch_commits(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "t")
    location = KeptTable(path)
    append_once(location, rows(0, 4), app_id="a", batch_id=0, partition_by=["partition"],
                configuration={"delta.appendOnly": "true"})

    assert append_once(location, rows(0, 0), app_id="a", batch_id=1)

    metadata = DeltaTable(path).metadata()
    assert metadata.partition_columns == ["partition"]
    assert metadata.configuration == {"delta.appendOnly": "true"}
    assert offsets(path) == [0, 1, 2, 3]
    assert DeltaTable(path).transaction_version("a") == 1


def test_a_negative_batch_id_is_refused_and_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "t"

    with pytest.raises(ConfigurationError, match="batch_id must be >= 0, got -1"):
        append_once(KeptTable(str(path)), rows(0, 1), app_id="a", batch_id=-1)
    assert not path.exists()


def test_a_failed_append_drops_the_kept_snapshot_and_the_next_one_lands(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    location = KeptTable(path)
    append_once(location, rows(0, 2), app_id="a", batch_id=0)
    wider = rows(2, 2).append_column("note", pa.array(["x", "y"]))

    with pytest.raises(SchemaMismatchError):
        append_once(location, wider, app_id="a", batch_id=1)

    assert location.seen_version() is None
    assert append_once(location, rows(2, 2), app_id="a", batch_id=1)
    assert offsets(path) == [0, 1, 2, 3]


def test_a_batch_below_the_recorded_one_is_named_as_another_applications() -> None:
    assert check_batch_order(None, "a", 0, "table t") is None
    assert check_batch_order(4, "a", 4, "table t") == 4
    assert check_batch_order(4, "a", 5, "table t") == 4

    with pytest.raises(AppIdConflictError,
                       match=r"table t already holds batch 4 of app_id 'a'.*at batch 3"):
        check_batch_order(4, "a", 3, "table t")


def test_a_commit_told_not_to_rebase_fails_on_a_moved_table_and_the_default_lands(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "t")
    write_deltalake(path, rows(0, 1))
    stale = DeltaTable(path)
    write_deltalake(path, rows(1, 1), mode="append")  # another writer moves the table on

    with pytest.raises(CommitFailedError):
        write_deltalake(stale, rows(2, 1), mode="append",
                        commit_properties=commit_properties("a", 5, rebase=False))
    write_deltalake(stale, rows(2, 1), mode="append",
                    commit_properties=commit_properties("a", 5, custom_metadata={"by": "test"}))
    write_deltalake(path, rows(3, 1), mode="append",
                    commit_properties=commit_properties("b", None))

    table = DeltaTable(path)
    assert offsets(path) == [0, 1, 2, 3]
    assert (table.version(), table.transaction_version("a")) == (3, 5)
    assert table.transaction_version("b") is None
    assert table.history(2)[1]["by"] == "test"
