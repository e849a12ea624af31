"""Iceberg catalogs the suite starts for a test (pyiceberg's SQL catalog on a SQLite file or on
the suite's PostgreSQL) and what a test reads back from their tables."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog import Catalog, load_catalog
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import Table

from kafka_share_eos.iceberg.snapshots import BATCH

BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
"""The SQL catalog's databases, for ``@pytest.fixture(params=BACKENDS)``."""


def catalog_config(request: pytest.FixtureRequest, tmp_path: Path, backend: str) -> dict[str, str]:
    """The configuration of a new SQL catalog on ``backend``, its warehouse in ``tmp_path``."""
    if backend == "sqlite":
        uri = f"sqlite:///{tmp_path / 'catalog.db'}"
    else:
        uri = request.getfixturevalue("postgres_url")
    warehouse = tmp_path / "warehouse"
    warehouse.mkdir(exist_ok=True)
    return {"name": f"c{uuid.uuid4().hex[:8]}", "type": "sql", "uri": uri,
            "warehouse": warehouse.as_uri()}


def open_catalog(config: dict[str, str]) -> Catalog:
    """The catalog of ``config``, as pyiceberg's own ``load_catalog`` builds it."""
    properties = dict(config)
    return load_catalog(properties.pop("name"), **properties)


def load(config: dict[str, str], table: str = "db.events") -> Table:
    return open_catalog(config).load_table(table)


def rows_of(config: dict[str, str], table: str = "db.events") -> pa.Table:
    """Every row of the table, as a reader sees it."""
    return load(config, table).scan().to_arrow()


def offsets(config: dict[str, str], table: str = "db.events") -> list[tuple[int, int]]:
    """The (partition, offset) of every row, sorted, duplicates kept."""
    read = rows_of(config, table)
    return sorted(zip(read["partition"].to_pylist(), read["offset"].to_pylist(), strict=True))


def batches_committed(config: dict[str, str], table: str = "db.events") -> list[Any]:
    """The batch property of each snapshot, oldest first (None: not the toolkit's)."""
    return [s.summary.additional_properties.get(BATCH) if s.summary else None
            for s in load(config, table).snapshots()]


class LosesAnswers(SqlCatalog):
    """A SQL catalog whose next commit lands and whose answer is then lost."""

    lose_next = False

    def commit_table(self, *args: Any, **kwargs: Any) -> Any:
        answer = super().commit_table(*args, **kwargs)
        if self.lose_next:
            LosesAnswers.lose_next = False
            raise ConnectionError("the catalog's answer was lost")
        return answer


class OtherWriterFirst(SqlCatalog):
    """A SQL catalog that lets another writer commit a batch right before its next commit."""

    before_next: Any = None

    def commit_table(self, *args: Any, **kwargs: Any) -> Any:
        if OtherWriterFirst.before_next is not None:
            other, OtherWriterFirst.before_next = OtherWriterFirst.before_next, None
            other()
        return super().commit_table(*args, **kwargs)


def sql_catalog(config: dict[str, str], kind: type[SqlCatalog]) -> SqlCatalog:
    """A catalog of class ``kind`` on the database and warehouse of ``config``."""
    properties = {k: v for k, v in config.items() if k != "name"}
    return kind(config["name"], **properties)
