"""The optional libraries, each a module that loads on first use (see :mod:`._extras`).

Type checkers see the real modules; at run time each name is a module that imports its library
the first time one of its attributes is used, so importing a module of the toolkit loads none of
them. Every feature checks its extra (``DELTA.require(...)``) before it uses one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_share_eos._extras import DELTA, ICEBERG, POSTGRES, SPARK, SQLITE

if TYPE_CHECKING:
    import deltalake as deltalake
    import psycopg as psycopg
    import pyiceberg.catalog as iceberg_catalog
    import pyiceberg.exceptions as iceberg_errors
    import pyiceberg.expressions as iceberg_expressions
    import pyiceberg.table as iceberg_table
    import pyiceberg.table.snapshots as iceberg_snapshots
    import pyiceberg.table.update.snapshot as iceberg_snapshot_updates
    import pyspark as pyspark
    import sqlalchemy as sa
    from pyspark import errors as spark_errors
    from pyspark import find_spark_home as spark_home
    from pyspark import sql as spark_sql
    from pyspark.sql import functions as spark_functions
    from pyspark.sql import types as spark_types
    from sqlalchemy.dialects import postgresql as sa_postgresql
    from sqlalchemy.dialects import sqlite as sa_sqlite
else:
    deltalake = DELTA.lazy("deltalake")
    psycopg = POSTGRES.lazy("psycopg")
    iceberg_catalog = ICEBERG.lazy("pyiceberg.catalog")
    iceberg_errors = ICEBERG.lazy("pyiceberg.exceptions")
    iceberg_expressions = ICEBERG.lazy("pyiceberg.expressions")
    iceberg_snapshots = ICEBERG.lazy("pyiceberg.table.snapshots")
    iceberg_snapshot_updates = ICEBERG.lazy("pyiceberg.table.update.snapshot")
    iceberg_table = ICEBERG.lazy("pyiceberg.table")
    pyspark = SPARK.lazy("pyspark")
    sa = SQLITE.lazy("sqlalchemy")
    spark_errors = SPARK.lazy("pyspark.errors")
    spark_home = SPARK.lazy("pyspark.find_spark_home")
    spark_sql = SPARK.lazy("pyspark.sql")
    spark_functions = SPARK.lazy("pyspark.sql.functions")
    spark_types = SPARK.lazy("pyspark.sql.types")
    sa_postgresql = SQLITE.lazy("sqlalchemy.dialects.postgresql")
    sa_sqlite = SQLITE.lazy("sqlalchemy.dialects.sqlite")

__all__ = [
    "deltalake", "iceberg_catalog", "iceberg_errors", "iceberg_expressions",
    "iceberg_snapshot_updates", "iceberg_snapshots", "iceberg_table", "psycopg", "pyspark", "sa",
    "sa_postgresql", "sa_sqlite", "spark_errors", "spark_functions", "spark_home", "spark_sql",
    "spark_types",
]
