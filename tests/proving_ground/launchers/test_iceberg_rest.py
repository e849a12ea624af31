"""Iceberg's reference REST catalog server as the launcher runs it: a table created and written
through pyiceberg on an S3 warehouse lands there, and the store's keys, given to the server in
its environment, are in none of the files of the run: not its log, not its catalog database, not
the table's metadata on the store. Given a PostgreSQL database, the server keeps its catalog
there, and a database URL with a password, which its log would show, is refused."""

from __future__ import annotations

import uuid
from pathlib import Path

import obstore
import pyarrow as pa
import pytest
import sqlalchemy as sa
from pyiceberg.catalog import load_catalog

from kafka_share_eos.proving_ground.errors import ObjectStoreServerError
from kafka_share_eos.proving_ground.launchers.iceberg_rest import (
    IcebergRestCatalog,
    jdbc_catalog,
    s3_file_io,
)
from kafka_share_eos.proving_ground.launchers.s3_server import S3Server

pytestmark = pytest.mark.timeout(240)


def test_a_table_on_an_s3_warehouse_is_written_without_a_key_in_any_file(
    s3_server: S3Server,
) -> None:
    environment = s3_server.environment()
    secret = environment["AWS_SECRET_ACCESS_KEY"]
    prefix = f"rest-{uuid.uuid4().hex[:8]}"
    with IcebergRestCatalog(s3_server.url(prefix), s3_environment=environment) as server:
        config = server.catalog_config() | s3_file_io(environment)
        catalog = load_catalog(config.pop("name"), **config)
        catalog.create_namespace("db")
        table = catalog.create_table("db.t", schema=pa.schema([("n", pa.int64())]))
        table.append(pa.table({"n": [1, 2, 3]}))

        assert catalog.load_table("db.t").scan().to_arrow()["n"].to_pylist() == [1, 2, 3]
        assert table.location() == s3_server.url(f"{prefix}/db/t")
        local = [path for path in server.log_file.parent.rglob("*") if path.is_file()]
        assert server.log_file in local and len(local) > 1
        assert [path for path in local if secret.encode() in path.read_bytes()] == []

    store = s3_server.obstore_store()
    objects = [entry["path"] for page in obstore.list(store, prefix=prefix) for entry in page]
    assert any(path.endswith(".metadata.json") for path in objects)
    assert [path for path in objects if secret.encode() in bytes(obstore.get(store, path).bytes())
            ] == []


@pytest.mark.postgres
def test_a_postgresql_database_holds_the_catalog(postgres_url: str, tmp_path: Path) -> None:
    with IcebergRestCatalog(tmp_path / "warehouse", database=postgres_url) as server:
        config = server.catalog_config()
        catalog = load_catalog(config.pop("name"), **config)
        catalog.create_namespace("db")
        catalog.create_table("db.t", schema=pa.schema([("n", pa.int64())])).append(
            pa.table({"n": [1, 2]}))

        assert catalog.load_table("db.t").scan().to_arrow()["n"].to_pylist() == [1, 2]
    engine = sa.create_engine(postgres_url)
    with engine.connect() as conn:
        rows = conn.execute(sa.text(
            "SELECT table_namespace, table_name, metadata_location FROM iceberg_tables")).all()
    engine.dispose()
    assert [(namespace, name) for namespace, name, _ in rows] == [("db", "t")]
    assert f"{tmp_path / 'warehouse' / 'db' / 't'}/metadata/" in rows[0][2]


def test_a_database_url_the_server_would_log_a_password_of_is_refused() -> None:
    assert jdbc_catalog("postgresql+psycopg://app@db.internal:5433/lake") == {
        "CATALOG_URI": "jdbc:postgresql://db.internal:5433/lake", "CATALOG_JDBC_USER": "app"}
    with pytest.raises(ObjectStoreServerError, match="logs every catalog setting") as refused:
        jdbc_catalog("postgresql://app:secret@db.internal/lake")
    assert "secret" not in str(refused.value)
    with pytest.raises(ObjectStoreServerError, match="postgresql:// URL"):
        jdbc_catalog("mysql://app@db.internal/lake")
