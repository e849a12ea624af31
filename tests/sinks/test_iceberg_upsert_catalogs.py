"""The Iceberg upsert on the catalogs and storage users run, each started by the suite: Iceberg's
reference REST catalog server on local disk and on S3, pyiceberg's SQL catalog on S3 and on Azure
Blob. A batch applied twice commits one snapshot, two batches land every row once, and the data
files are on the storage the catalog names."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from helpers.iceberg import batches_committed, load, offsets, rows_of
from helpers.iceberg_storage import PLACES, Place, place
from helpers.pickled import apply_elsewhere
from helpers.upsert_rows import records

from kafka_share_eos.strategies import IdempotentUpsertSink

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(params=PLACES)
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Place:
    return place(request, tmp_path, request.param)


def run(offsets_of: range) -> pa.Table:
    return records([(0, o) for o in offsets_of])


def data_files(where: Place) -> list[str]:
    return load(where.config, where.table).inspect.files()["file_path"].to_pylist()


def test_a_batch_applied_twice_commits_once_and_two_batches_land_every_row_once(
    where: Place,
) -> None:
    sink = IdempotentUpsertSink.iceberg(where.table, catalog=where.config, create_table=True,
                                        app_id="a")
    first = sink.apply(run(range(6)), 0)
    again = sink.apply(run(range(6)), 0)
    later = sink.apply(run(range(4, 10)), 1)

    assert (first.rows_written, again.rows_written, later.rows_written) == (6, 0, 4)
    assert again.write_path == "skipped-batch"
    assert offsets(where.config, where.table) == [(0, o) for o in range(10)]
    assert batches_committed(where.config, where.table) == ["0", "1"]
    files = data_files(where)
    assert files and all(path.startswith(f"{where.warehouse_scheme}:") for path in files)


@pytest.mark.full
def test_newer_versions_rewrite_the_data_files_on_the_store_and_a_copy_elsewhere_skips_replays(
    where: Place,
) -> None:
    sink = IdempotentUpsertSink.iceberg(where.table, catalog=where.config, create_table=True,
                                        key_columns=["offset"], version_column="deliveryCount",
                                        app_id="a")
    sink.apply(records([(0, o) for o in range(6)]), 0)
    newer = records([(0, o) for o in range(3)], delivery=2)

    replaced = sink.apply(newer, 1)
    replayed, older = apply_elsewhere(sink, [(newer, 1), (records([(0, 0)]), 2)])

    assert replaced.write_path == "overwrite"
    assert (replayed.write_path, older.rows_written) == ("skipped-batch", 0)
    read = rows_of(where.config, where.table).sort_by("offset")
    assert read["offset"].to_pylist() == list(range(6))
    assert read["deliveryCount"].to_pylist() == [2, 2, 2, 1, 1, 1]
    assert all(path.startswith(f"{where.warehouse_scheme}:") for path in data_files(where))
