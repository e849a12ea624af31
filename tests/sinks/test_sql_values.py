"""Arrow rows as values the SQL drivers take: Python rows for parameters (timestamps cut to
microseconds), timestamps as text COPY parses, and whole columns as PostgreSQL array literals
that PostgreSQL reads back to the same values (PostgreSQL for the round trips)."""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Iterator

import pyarrow as pa
import pytest
import sqlalchemy as sa

from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.sinks.sql_values import postgres_array, python_rows

STAMP = dt.datetime(2024, 5, 6, 7, 8, 9, 123_456)
NANOS = 1_714_979_289_123_456_789  # 2024-05-06 07:08:09.123456789 UTC


def test_python_rows_are_tuples_of_python_values_in_row_order() -> None:
    table = pa.table({"id": [1, 2, None], "name": ["a", None, "c"], "raw": [b"x", b"", None]})
    assert list(python_rows(table)) == [(1, "a", b"x"), (2, None, b""), (None, "c", None)]
    assert list(python_rows(table.slice(0, 0))) == []


def test_nanosecond_timestamps_are_cut_to_microseconds() -> None:
    table = pa.table({"at": pa.array([NANOS, None], pa.timestamp("ns", "UTC")),
                      "local": pa.array([NANOS, NANOS], pa.timestamp("ns"))})
    [first, second] = python_rows(table)
    assert first == (dt.datetime(2024, 5, 6, 7, 8, 9, 123_456, tzinfo=dt.UTC),
                     dt.datetime(2024, 5, 6, 7, 8, 9, 123_456))
    assert second[0] is None


def test_timestamps_for_copy_are_text_in_utc_marked_when_zoned() -> None:
    table = pa.table({"id": [1, 2],
                      "at": pa.array([NANOS, None], pa.timestamp("ns", "Europe/Paris")),
                      "local": pa.array([STAMP, STAMP], pa.timestamp("us"))})
    assert list(python_rows(table, for_copy=True)) == [
        (1, "2024-05-06 07:08:09.123456+00", "2024-05-06 07:08:09.123456"),
        (2, None, "2024-05-06 07:08:09.123456"),
    ]


@pytest.mark.parametrize(("column", "literal"), [
    (pa.array([1, None, -3], pa.int64()), "{1,NULL,-3}"),
    (pa.array([1.5, None], pa.float64()), "{1.5,NULL}"),
    (pa.array([decimal.Decimal("1.25")], pa.decimal128(5, 2)), "{1.25}"),
    (pa.array([True, False, None]), "{true,false,NULL}"),
    (pa.array(['say "hi"', "back\\slash", None, ""]),
     '{"say \\"hi\\"","back\\\\slash",NULL,""}'),
    (pa.array(["x"], pa.large_string()), '{"x"}'),
    (pa.array([dt.date(2024, 2, 29)], pa.date32()), '{"2024-02-29"}'),
    (pa.array([NANOS], pa.timestamp("ns", "UTC")), '{"2024-05-06 07:08:09.123456+00"}'),
    (pa.array([], pa.int32()), "{}"),
    (pa.chunked_array([[1, 2], [3]], pa.int16()), "{1,2,3}"),
], ids=["int", "float", "decimal", "bool", "text", "large-text", "date", "timestamp", "empty",
        "chunked"])
def test_a_column_becomes_one_array_literal(
    column: pa.Array | pa.ChunkedArray, literal: str
) -> None:
    assert postgres_array(column) == literal


@pytest.mark.parametrize("kind", [pa.binary(), pa.list_(pa.int64()), pa.struct([("a", pa.int8())])])
def test_a_column_without_an_array_literal_is_refused_naming_its_type(kind: pa.DataType) -> None:
    with pytest.raises(ConfigurationError, match=rf"an Arrow column of type {kind} has no "
                                                 "PostgreSQL array literal"):
        postgres_array(pa.array([None], kind))


@pytest.fixture
def postgres(postgres_url: str) -> Iterator[sa.Connection]:
    engine = sa.create_engine(postgres_url)
    with engine.connect() as conn:
        yield conn
    engine.dispose()


@pytest.mark.postgres
@pytest.mark.parametrize(("column", "sql_type"), [
    (pa.array([1, None, -(2**62)], pa.int64()), "bigint"),
    (pa.array([0.1, None, -2.5]), "double precision"),
    (pa.array([decimal.Decimal("123456.789"), None], pa.decimal128(12, 3)), "numeric"),
    (pa.array([True, None, False]), "boolean"),
    (pa.array(['{"a": 1}', 'quote " and \\ and ,', "NULL", None, "", " pad "]), "text"),
    (pa.array([dt.date(1999, 12, 31), None], pa.date32()), "date"),
    (pa.array([STAMP.replace(tzinfo=dt.UTC), None], pa.timestamp("us", "UTC")), "timestamptz"),
    (pa.array([STAMP], pa.timestamp("us")), "timestamp"),
], ids=["bigint", "double", "numeric", "boolean", "text", "date", "timestamptz", "timestamp"])
def test_postgresql_reads_the_literal_back_as_the_column(
    postgres: sa.Connection, column: pa.Array, sql_type: str
) -> None:
    stored = postgres.execute(sa.text(f"SELECT CAST(:values AS {sql_type}[])"),
                              {"values": postgres_array(column)}).scalar_one()
    assert stored == column.to_pylist()


@pytest.mark.postgres
def test_postgresql_parses_the_copy_text_of_timestamps(postgres: sa.Connection) -> None:
    table = pa.table({"at": pa.array([NANOS], pa.timestamp("ns", "UTC")),
                      "local": pa.array([STAMP], pa.timestamp("us"))})
    [(zoned, local)] = python_rows(table, for_copy=True)
    postgres.exec_driver_sql("SET TIME ZONE 'America/New_York'")
    parsed = postgres.execute(sa.text("SELECT CAST(:zoned AS timestamptz), "
                                      "CAST(:local AS timestamp)"),
                              {"zoned": zoned, "local": local}).one()
    assert parsed[0] == dt.datetime(2024, 5, 6, 7, 8, 9, 123_456, tzinfo=dt.UTC)
    assert parsed[1] == STAMP
