"""Dead letters: the rows a strategy could not apply, with why, where they came from and when.

A dead letter is identified by its record's Kafka coordinates (``topic/partition/offset``), so
writing the letters of a replayed batch, or of a record the broker delivered again, adds nothing:
every sink keeps the first letter of a record. Rows without coordinates (a transform dropped
them) are identified by a hash of their content.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

DEAD_LETTER_SCHEMA = pa.schema(
    [
        pa.field("letter_id", pa.string(), nullable=False),
        pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()),
        pa.field("offset", pa.int64()),
        pa.field("delivery_count", pa.int32()),
        pa.field("key", pa.binary()),
        pa.field("value", pa.binary()),
        pa.field("row", pa.string()),
        pa.field("stage", pa.string(), nullable=False),
        pa.field("error_type", pa.string(), nullable=False),
        pa.field("error", pa.string(), nullable=False),
        pa.field("strategy", pa.string(), nullable=False),
        pa.field("batch_id", pa.int64(), nullable=False),
        pa.field("dead_lettered_at", pa.timestamp("us", tz="UTC"), nullable=False),
    ]
)
"""Columns of every dead-letter sink."""

_COORDINATES = {"topic": "topic", "partition": "partition", "offset": "offset",
                "deliveryCount": "delivery_count", "key": "key", "value": "value"}


@dataclass(frozen=True)
class Rejection:
    """Row ``index`` of a table could not be applied at ``stage`` because of ``error``."""

    index: int
    stage: str
    error: BaseException


def _json_safe(value: Any) -> Any:
    """``value`` as strict JSON can hold it: binary as base64, temporal values in ISO 8601,
    decimals as their exact text, and NaN and infinities (which strict JSON lacks) as text."""
    if isinstance(value, bytes):
        return {"base64": base64.b64encode(value).decode("ascii")}
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value


def _error_text(error: BaseException) -> str:
    text = str(error).strip() or repr(error)
    # A constraint error can quote the whole statement; the letter needs the reason.
    return text if len(text) <= 4000 else text[:4000] + " ..."


def letters(
    table: pa.Table, rejections: Sequence[Rejection], *, strategy: str, batch_id: int
) -> pa.Table:
    """The dead letters (:data:`DEAD_LETTER_SCHEMA`) of the rejected rows of ``table``."""
    now = dt.datetime.now(dt.UTC)
    rows: list[dict[str, Any]] = []
    for rejection in rejections:
        source = table.slice(rejection.index, 1).to_pylist()[0]
        letter = {column: source.get(name) for name, column in _COORDINATES.items()}
        row_json = json.dumps(_json_safe(source), sort_keys=True, allow_nan=False)
        if None in (letter["topic"], letter["partition"], letter["offset"]):
            letter_id = "sha256:" + hashlib.sha256(row_json.encode()).hexdigest()
        else:
            letter_id = f"{letter['topic']}/{letter['partition']}/{letter['offset']}"
        rows.append(
            {
                **letter,
                "letter_id": letter_id,
                "row": row_json,
                "stage": rejection.stage,
                "error_type": type(rejection.error).__name__,
                "error": _error_text(rejection.error),
                "strategy": strategy,
                "batch_id": batch_id,
                "dead_lettered_at": now,
            }
        )
    for row in rows:
        for binary in ("key", "value"):
            # The row's JSON keeps whatever a transform put under these names.
            value = row[binary]
            row[binary] = value.encode() if isinstance(value, str) else (
                value if isinstance(value, bytes) else None
            )
    return pa.Table.from_pylist(rows, schema=DEAD_LETTER_SCHEMA)


def first_per_record(letters_table: pa.Table) -> pa.Table:
    """One letter per ``letter_id`` (the first), for sinks that can hold repeats."""
    seen: set[str] = set()
    keep: list[int] = []
    for index, letter_id in enumerate(letters_table["letter_id"].to_pylist()):
        if letter_id not in seen:
            seen.add(letter_id)
            keep.append(index)
    if len(keep) == letters_table.num_rows:
        return letters_table
    return letters_table.take(pa.array(keep, pa.int64()))
