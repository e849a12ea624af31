"""SQL text for delta-rs predicates: column names quoted and literals escaped so that names and
values holding quotes, spaces or reserved words select exactly the rows they name in a real
Delta table, and values with no literal form are refused."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from helpers.delta import read_delta

from kafka_share_eos.delta.predicates import quote_identifier, sql_literal

NOTE = 'the "note"'


def test_identifiers_are_double_quoted_with_inner_quotes_doubled() -> None:
    assert quote_identifier("offset") == '"offset"'
    assert quote_identifier(NOTE) == '"the ""note"""'


def test_literals_are_integers_as_they_are_and_strings_single_quoted() -> None:
    assert sql_literal(42) == "42"
    assert sql_literal(-7) == "-7"
    assert sql_literal("it's") == "'it''s'"
    assert sql_literal("") == "''"


@pytest.mark.parametrize("value", [True, 1.5, None, b"bytes"])
def test_values_without_a_literal_form_are_refused(value: object) -> None:
    with pytest.raises(TypeError, match="no SQL literal for"):
        sql_literal(value)  # type: ignore[arg-type]


def test_predicates_select_exactly_the_rows_they_name_in_a_delta_table(tmp_path: Path) -> None:
    path = str(tmp_path / "notes")
    write_deltalake(path, pa.table({
        "offset": pa.array([1, 2, 3, 4], pa.int64()),
        NOTE: ["it's", "its", "it''s", "it's"],
    }))

    apostrophe = sql_literal("it's")
    DeltaTable(path).delete(f"{quote_identifier(NOTE)} = {apostrophe}"
                            f" AND {quote_identifier('offset')} <> {sql_literal(4)}")

    left = read_delta(path, f"SELECT {quote_identifier('offset')} FROM t ORDER BY 1")
    assert left["offset"].to_pylist() == [2, 3, 4]
