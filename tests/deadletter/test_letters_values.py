"""A refused row becomes a dead letter whatever its column types: decimals, dates, times,
binary values and non-finite floats are written as strict JSON (no NaN or Infinity tokens)."""

from __future__ import annotations

import datetime as dt
import decimal
import json
from pathlib import Path

import pyarrow as pa
import sqlalchemy as sa
from helpers.batches import source_rows

from kafka_share_eos import DeadLetterPolicy, IdempotentUpsertSink, SqlDeadLetters


def refuse_odd_offsets(rows: pa.Table) -> pa.Table:
    if any(offset % 2 for offset in rows["offset"].to_pylist()):
        raise ValueError("odd offsets cannot be decoded")
    return rows.select(["topic", "partition", "offset"])


def strict(text: str) -> object:
    def refuse(token: str) -> object:
        raise AssertionError(f"not strict JSON: {token}")

    return json.loads(text, parse_constant=refuse)


def test_letters_of_rows_with_every_kind_of_value_are_strict_json(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'target.db'}"
    rows = source_rows(
        topic="t", partition=0, offset=[0, 1, 2, 3],
        amount=pa.array([decimal.Decimal("1.50")] * 4, pa.decimal128(10, 2)),
        day=pa.array([dt.date(2026, 11, 25)] * 4),
        at=pa.array([dt.time(9, 30)] * 4),
        raw=pa.array([b"\x00\xff"] * 4, pa.binary()),
        ratio=pa.array([float("nan"), float("inf"), float("-inf"), 0.5], pa.float64()),
    )
    sink = IdempotentUpsertSink.sql(
        url, "orders", create_table=True, transform=refuse_odd_offsets,
        dead_letters=DeadLetterPolicy(SqlDeadLetters(url, "letters")),
    )
    report = sink.apply(rows, 0)
    assert (report.rows_written, report.dead_lettered) == (2, 2)
    with sa.create_engine(url).connect() as conn:
        query = sa.text('SELECT "offset", "row" FROM letters ORDER BY "offset"')
        letters = conn.execute(query).all()
    assert [offset for offset, _ in letters] == [1, 3]
    first = strict(letters[0][1])
    assert first["amount"] == "1.50" and first["day"] == "2026-11-25" and first["at"] == "09:30:00"
    assert first["raw"] == {"base64": "AP8="} and first["ratio"] == "inf"
