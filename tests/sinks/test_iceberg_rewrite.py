"""Copy-on-write replacement in one snapshot on a real table: only the data files holding a
replaced key are rewritten, every other row and file stays, and a stored row with a null key is
never taken for a replaced one."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from helpers.iceberg import catalog_config, open_catalog

from kafka_share_eos.sinks.iceberg_rewrite import kept_rows, replace_rows

SCHEMA = pa.schema([("id", pa.int64()), ("version", pa.int64()), ("name", pa.string())])


def rows(ids: range | list[int], version: int) -> pa.Table:
    return pa.table({"id": list(ids), "version": [version] * len(ids),
                     "name": [f"v{version}-{i}" for i in ids]}, schema=SCHEMA)


@pytest.fixture
def table(request: pytest.FixtureRequest, tmp_path: Path) -> object:
    catalog = open_catalog(catalog_config(request, tmp_path, "sqlite"))
    catalog.create_namespace("db")
    created = catalog.create_table("db.events", SCHEMA)
    created.append(rows(range(0, 10), 1))  # one data file per append
    created.append(rows(range(100, 110), 1))
    return created


def files(table: object) -> set[str]:
    return {task.file.file_path for task in table.scan().plan_files()}  # type: ignore[attr-defined]


def test_only_the_files_holding_replaced_keys_are_rewritten_in_one_snapshot(
    table: object,
) -> None:
    before = files(table)
    snapshots = len(table.snapshots())  # type: ignore[attr-defined]
    transaction = table.transaction()  # type: ignore[attr-defined]
    replace_rows(transaction, table, pa.concat_tables([rows([3, 5], 2), rows([200], 2)]),  # type: ignore[arg-type]
                 pa.table({"id": pa.array([3, 5], pa.int64())}), {"batch": "7"})
    transaction.commit_transaction()

    table.refresh()  # type: ignore[attr-defined]
    read = table.scan().to_arrow()  # type: ignore[attr-defined]
    stored = sorted(zip(read["id"].to_pylist(), read["version"].to_pylist(), strict=True))
    expected = [(i, 2 if i in (3, 5, 200) else 1) for i in [*range(10), *range(100, 110), 200]]
    assert stored == expected
    snapshot = table.current_snapshot()  # type: ignore[attr-defined]
    assert len(table.snapshots()) == snapshots + 1  # type: ignore[attr-defined]
    assert snapshot.summary.additional_properties["batch"] == "7"
    kept = files(table) & before
    assert len(kept) == 1  # the file of ids 100-109 held no replaced key
    assert set(table.scan(row_filter="id >= 100 and id < 110").to_arrow()["id"].to_pylist()) \
        == set(range(100, 110))  # type: ignore[attr-defined]


def test_kept_rows_match_every_key_column_and_never_a_null_key() -> None:
    stored = pa.table({"topic": ["t", "t", "u", None], "offset": pa.array([1, 2, 1, 1], pa.int64()),
                       "value": ["a", "b", "c", "d"]})
    replaced = pa.table({"topic": ["t", "x"], "offset": pa.array([1, 1], pa.int64())})

    kept = kept_rows(stored, replaced)

    assert kept is not None and kept["value"].to_pylist() == ["b", "c", "d"]
    assert kept_rows(stored, pa.table({"topic": ["x"], "offset": pa.array([9], pa.int64())})) \
        is None
