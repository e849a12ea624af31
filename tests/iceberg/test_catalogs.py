"""The catalog a strategy's copy builds in its own process: from the configuration, or from a
catalog object's class, name and properties; refused when it cannot be built there."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from helpers.iceberg import catalog_config, open_catalog
from helpers.pickled import copied
from pyiceberg.catalog.sql import SqlCatalog

from kafka_share_eos.errors import SinkConfigurationError
from kafka_share_eos.iceberg.catalogs import DEFAULT_CATALOG_NAME, IcebergCatalog


def make_table(config: dict[str, str]) -> None:
    catalog = open_catalog(config)
    catalog.create_namespace("db")
    catalog.create_table("db.events", pa.schema([("id", pa.int64())]))


def test_a_copy_of_a_configuration_builds_a_catalog_that_finds_the_tables(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    config = catalog_config(request, tmp_path, "sqlite")
    make_table(config)
    given = IcebergCatalog(config)
    given.catalog()

    copy = copied(given)

    assert copy.name == config["name"]
    assert copy.catalog() is not given.catalog()
    assert copy.catalog().table_exists("db.events")


def test_a_copy_of_a_catalog_object_builds_one_of_its_class_from_its_properties(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    config = catalog_config(request, tmp_path, "sqlite")
    make_table(config)
    properties = {k: v for k, v in config.items() if k != "name"}
    catalog = SqlCatalog(config["name"], **properties)

    copy = copied(IcebergCatalog(catalog))

    assert type(copy.catalog()) is SqlCatalog
    assert copy.catalog() is not catalog
    assert copy.catalog().table_exists("db.events")


def test_a_catalog_given_is_left_to_its_owner_and_one_built_is_closed() -> None:
    catalog = SqlCatalog("memory", uri="sqlite:///:memory:", warehouse="file:///tmp/unused")
    given = IcebergCatalog(catalog)
    given.forget()
    assert given.catalog() is catalog

    built = IcebergCatalog({"type": "sql", "uri": "sqlite:///:memory:"})
    first = built.catalog()
    built.forget()
    assert built.catalog() is not first
    assert built.name == DEFAULT_CATALOG_NAME


def test_a_catalog_in_this_processs_memory_cannot_travel() -> None:
    catalog = IcebergCatalog({"type": "sql", "uri": "sqlite:///:memory:"})

    with pytest.raises(SinkConfigurationError, match="in this process's memory"):
        copied(catalog)


@pytest.mark.parametrize(("given", "message"), [
    ({"warehouse": "file:///tmp"}, "needs at least 'type' or 'uri'"),
    ("sqlite:///catalog.db", "takes a pyiceberg Catalog or its configuration dict, got str"),
])
def test_what_is_not_a_catalog_is_refused(given: object, message: str) -> None:
    with pytest.raises(SinkConfigurationError, match=message):
        IcebergCatalog(given)  # type: ignore[arg-type]
