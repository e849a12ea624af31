"""Iceberg catalogs on the storage users run, each started by the suite: Iceberg's reference REST
catalog server (its catalog in SQLite or in PostgreSQL) and pyiceberg's SQL catalog, with the
warehouse on local disk, on S3 (the suite's SeaweedFS) or on Azure Blob (Azurite). Each test
gets a namespace of its own, so that tests may share one server."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from kafka_share_eos.proving_ground.launchers.iceberg_rest import azure_file_io, s3_file_io

PLACES = ["rest-local", "sql-s3", "rest-s3", "sql-azure",
          pytest.param("rest-postgres", marks=pytest.mark.postgres)]
"""Catalog and storage, as ``<catalog>-<storage>`` (``rest-postgres``: the REST server keeping
its catalog in PostgreSQL, its warehouse on local disk)."""


@dataclass(frozen=True)
class Place:
    """A catalog's configuration (credentials included, in memory only) and a fresh table."""

    config: dict[str, str]
    table: str
    warehouse_scheme: str


def place(request: pytest.FixtureRequest, tmp_path: Path, name: str) -> Place:
    """A fresh table identifier on the catalog and storage ``name`` (one of :data:`PLACES`)."""
    unique = uuid.uuid4().hex[:8]
    table = f"ns_{unique}.events"
    if name == "rest-local":
        return Place(request.getfixturevalue("iceberg_rest_catalog"), table, "file")
    if name == "rest-postgres":
        return Place(request.getfixturevalue("iceberg_rest_catalog_postgres"), table, "file")
    if name == "rest-s3":
        return Place(request.getfixturevalue("iceberg_rest_catalog_s3"), table, "s3")
    sql = {"name": f"c{unique}", "type": "sql", "uri": f"sqlite:///{tmp_path / 'catalog.db'}"}
    if name == "sql-s3":
        s3 = request.getfixturevalue("s3_server")
        return Place(sql | {"warehouse": s3.url(f"iceberg-sql-{unique}")}
                     | s3_file_io(s3.environment()), table, "s3")
    if name == "sql-azure":
        azure = request.getfixturevalue("azurite_server")
        return Place(sql | {"warehouse": f"abfs://{azure.container}/iceberg-sql-{unique}"}
                     | azure_file_io(azure.storage_options()), table, "abfs")
    raise ValueError(f"no such catalog and storage: {name}")
