"""The optional libraries as modules that load on first use: importing them loads nothing, the
first attribute used loads the real library, and one that is not installed is refused naming
the extra that installs it (fresh processes for what is loaded)."""

from __future__ import annotations

import json
import tempfile
import textwrap
from collections.abc import Sequence
from importlib import import_module
from pathlib import Path
from typing import Any

import pytest
from helpers.extras import OPTIONAL, without
from helpers.scripts import run_python

from kafka_share_eos import _libs

pytestmark = pytest.mark.timeout(120)

LIBRARY_OF = {
    "deltalake": "deltalake", "iceberg_catalog": "pyiceberg.catalog",
    "iceberg_errors": "pyiceberg.exceptions", "iceberg_expressions": "pyiceberg.expressions",
    "iceberg_snapshots": "pyiceberg.table.snapshots", "iceberg_table": "pyiceberg.table",
    "iceberg_snapshot_updates": "pyiceberg.table.update.snapshot",
    "psycopg": "psycopg", "pyspark": "pyspark", "sa": "sqlalchemy",
    "sa_postgresql": "sqlalchemy.dialects.postgresql",
    "sa_sqlite": "sqlalchemy.dialects.sqlite", "spark_errors": "pyspark.errors",
    "spark_functions": "pyspark.sql.functions", "spark_home": "pyspark.find_spark_home",
    "spark_sql": "pyspark.sql", "spark_types": "pyspark.sql.types",
}


def in_fresh_process(script: str, blocked: Sequence[str] = ()) -> Any:
    """Run ``script`` where ``blocked`` cannot be imported; the JSON it prints last."""
    prelude = f"import json, sys\nloaded = lambda: [m for m in {OPTIONAL!r} if m in sys.modules]\n"
    with tempfile.TemporaryDirectory(prefix="kse-libs-") as site:
        result = run_python("-c", prelude + textwrap.dedent(script),
                            env=without(blocked, Path(site)))
    return json.loads(result.stdout.splitlines()[-1])


def test_every_name_stands_for_its_library() -> None:
    assert sorted(_libs.__all__) == sorted(LIBRARY_OF)
    for name, library in LIBRARY_OF.items():
        lazy = getattr(_libs, name)
        assert lazy.__name__ == library
        assert lazy.__file__ == import_module(library).__file__, name


def test_attributes_are_the_real_librarys() -> None:
    import deltalake
    import sqlalchemy

    assert _libs.sa.Integer is sqlalchemy.Integer
    assert _libs.deltalake.DeltaTable is deltalake.DeltaTable
    assert _libs.sa_sqlite.insert is import_module("sqlalchemy.dialects.sqlite").insert
    assert _libs.spark_types.LongType().simpleString() == "bigint"


def test_importing_them_loads_no_library_and_a_first_use_loads_only_its_own() -> None:
    found = in_fresh_process("""
        from kafka_share_eos import _libs
        before = loaded()
        _libs.sa.text("SELECT 1")
        print(json.dumps([before, loaded()]))
    """)
    assert found == [[], ["sqlalchemy"]]


@pytest.mark.parametrize(("name", "blocked", "extra"), [
    ("sa", ["sqlalchemy"], "sqlite"),
    ("sa_postgresql", ["sqlalchemy"], "sqlite"),
    ("psycopg", ["psycopg"], "postgres"),
    ("deltalake", ["deltalake"], "delta"),
    ("spark_sql", ["pyspark"], "spark"),
])
def test_a_library_not_installed_is_refused_naming_its_extra(
    name: str, blocked: list[str], extra: str
) -> None:
    refused = in_fresh_process(f"""
        from kafka_share_eos import _libs
        from kafka_share_eos.errors import MissingExtraError
        try:
            _libs.{name}.anything
        except MissingExtraError as error:
            print(json.dumps([error.extra, error.name, str(error)]))
    """, blocked)
    assert refused[0] == extra and refused[1] == blocked[0]
    assert refused[2] == (
        f"{blocked[0]} is not installed (used by kafka_share_eos (it uses "
        f"{LIBRARY_OF[name]})): pip install 'kafka-share-eos[{extra}]'")


def test_an_attribute_the_library_lacks_is_an_attribute_error_not_a_missing_extra() -> None:
    with pytest.raises(AttributeError, match="no_such_thing"):
        _ = _libs.sa.no_such_thing
