"""Key filters read against a real table: the superset filter holds every stored row of the
batch's keys, and the stored keys read through it are exactly those."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from helpers.iceberg import catalog_config, open_catalog

from kafka_share_eos.sinks.iceberg_keys import covering, stored_keys

STORED = pa.table({
    "topic": ["t"] * 6 + ["u"] * 3,
    "partition": pa.array([0, 0, 0, 1, 1, 1, 0, 0, 0], pa.int32()),
    "offset": pa.array([1, 2, 900, 1, 2, 3, 1, 2, 3], pa.int64()),
})


@pytest.fixture
def table(request: pytest.FixtureRequest, tmp_path: Path) -> object:
    catalog = open_catalog(catalog_config(request, tmp_path, "sqlite"))
    catalog.create_namespace("db")
    created = catalog.create_table("db.events", STORED.schema)
    created.append(STORED)
    return created


def keys(rows: list[tuple[str, int, int]]) -> pa.Table:
    return pa.Table.from_pylist(
        [{"topic": t, "partition": p, "offset": o} for t, p, o in rows], schema=STORED.schema
    )


def scanned(table: object, expression: object) -> set[tuple[str, int, int]]:
    read = table.scan(row_filter=expression).to_arrow()  # type: ignore[attr-defined]
    return set(zip(*(read[name].to_pylist() for name in STORED.column_names), strict=True))


@pytest.mark.parametrize("wanted", [
    [("t", 0, 1), ("t", 0, 2), ("u", 0, 3)],  # runs: one range per (topic, partition)
    [("t", 0, 1), ("t", 0, 900), ("u", 0, 3), ("t", 1, 9)],  # spread: bounds of each column
])
def test_the_superset_holds_every_stored_row_of_the_keys_and_the_read_only_those(
    table: object, wanted: list[tuple[str, int, int]]
) -> None:
    stored = set(zip(*(STORED[n].to_pylist() for n in STORED.column_names), strict=True))

    assert scanned(table, covering(keys(wanted))) >= stored & set(wanted)
    found = stored_keys(table, keys(wanted), STORED.column_names)  # type: ignore[arg-type]
    assert set(zip(*(found[n].to_pylist() for n in STORED.column_names), strict=True)) == (
        stored & set(wanted)
    )
    assert found.schema == STORED.schema
