"""In-batch deduplication of Arrow tables on key columns: the newest version of each key."""

from __future__ import annotations

import pyarrow as pa
import pytest

from kafka_share_eos.sinks import keep_latest

pytestmark = pytest.mark.timeout(60)


def test_versions_highest_wins_ties_go_to_the_later_row_nulls_lose() -> None:
    table = pa.table(
        {
            "k": ["a", "b", "a", "c", "b", "a", "c"],
            "v": [1, 5, 3, None, 5, 2, 0],
            "payload": ["a1", "b5", "a3", "cN", "b5-late", "a2", "c0"],
        }
    )
    picked = keep_latest(table, ["k"], "v").to_pylist()
    assert sorted((r["k"], r["payload"]) for r in picked) == [
        ("a", "a3"),
        ("b", "b5-late"),
        ("c", "c0"),
    ]


def test_table_without_duplicates_is_returned_as_is() -> None:
    table = pa.table({"k": [3, 1, 2], "v": [1, 1, 1]})
    assert keep_latest(table, ["k"], "v") is table
