"""Opening and creating tables, and commits that fail on a newer
snapshot rather than being rebased onto it by pyiceberg."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from helpers.iceberg import catalog_config, open_catalog, sql_catalog
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.exceptions import CommitFailedException

from kafka_share_eos.iceberg.tables import (
    check_writable,
    create_table,
    load_table,
    without_rebase,
)

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


@pytest.fixture
def config(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    return catalog_config(request, tmp_path, "sqlite")


def test_a_missing_table_is_none_and_is_created_with_its_namespace(
    config: dict[str, str],
) -> None:
    catalog = open_catalog(config)
    assert load_table(catalog, "db.events") is None

    created = create_table(catalog, "db.events", SCHEMA)
    again = create_table(catalog, "db.events", SCHEMA)

    assert created.metadata.table_uuid == again.metadata.table_uuid
    loaded = load_table(catalog, "db.events")
    assert loaded is not None and loaded.schema().as_arrow().names == ["id", "name"]
    check_writable(loaded, "db.events")


def test_a_commit_prepared_on_an_older_snapshot_fails_instead_of_being_rebased(
    config: dict[str, str],
) -> None:
    catalog = open_catalog(config)
    stale = create_table(catalog, "db.events", SCHEMA)
    rows = pa.table({"id": [1], "name": ["a"]}).cast(SCHEMA)
    catalog.load_table("db.events").append(rows)  # another writer

    with pytest.raises(CommitFailedException), \
            without_rebase(stale).transaction() as transaction:
        transaction.append(rows)

    # pyiceberg's own transaction would have rebased it; the table's properties are untouched.
    table = catalog.load_table("db.events")
    assert table.scan().to_arrow().num_rows == 1
    assert "commit.retry.num-retries" not in table.metadata.properties


def test_a_namespace_another_writer_creates_at_the_same_time_is_taken(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    config = catalog_config(request, tmp_path, "sqlite")

    class Racing(SqlCatalog):
        """Sees no namespace once, as when another writer inserts it right after the check."""

        raced = False

        def namespace_exists(self, namespace: Any) -> bool:
            if not Racing.raced:
                Racing.raced = True
                return False
            return super().namespace_exists(namespace)

    open_catalog(config).create_namespace("db")
    racing = sql_catalog(config, Racing)

    table = create_table(racing, "db.events", pa.schema([("id", pa.int64())]))

    assert Racing.raced and table.name() == ("db", "events")
