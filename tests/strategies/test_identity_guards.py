"""Every batch is held to what the first one was: the version guard is total (across batches a
null or NaN version loses to any real version, as inside one batch: a stored one never blocks
the next real version, an incoming one never replaces a real one), and a later batch without
the key or version column, or with a column the target lacks, is refused as a first batch would
be. Real targets: SQLite, PostgreSQL (row path and COPY path) and Delta tables on disk."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest
import sqlalchemy as sa
from helpers.delta import read_delta

from kafka_share_eos import IdempotentUpsertSink, MissingColumnsError

NAN = float("nan")


def batch(keys: list[int], versions: list[float | None], values: list[str]) -> pa.Table:
    return pa.table({"k": pa.array(keys, pa.int64()), "v": pa.array(versions, pa.float64()),
                     "payload": values})


FIRST = batch([1, 2, 3, 4], [None, NAN, 5.0, 2.0], ["1-null", "2-nan", "3-five", "4-two"])
SECOND = batch([1, 2, 3, 4], [1.0, 1.0, None, NAN], ["1-one", "2-one", "3-null", "4-nan"])
# Real versions replaced null and NaN ones; null and NaN versions replaced nothing.
EXPECTED = {1: "1-one", 2: "2-one", 3: "3-five", 4: "4-two"}

Target = tuple[IdempotentUpsertSink, Callable[[], dict[int, str]]]


def sql_target(url: str, bulk_threshold: int) -> Target:
    sink = IdempotentUpsertSink.sql(url, "orders", key_columns=["k"], version_column="v",
                                    create_table=True, bulk_threshold=bulk_threshold)
    engine = sa.create_engine(url)

    def stored() -> dict[int, str]:
        with engine.connect() as conn:
            return dict(conn.execute(sa.text("SELECT k, payload FROM orders")).all())

    return sink, stored


@pytest.fixture(params=["sqlite", "postgres-rows", "postgres-copy", "delta"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Target:
    if request.param == "sqlite":
        return sql_target(f"sqlite:///{tmp_path / 'orders.db'}", 100)
    if request.param.startswith("postgres"):
        url = request.getfixturevalue("postgres_url")
        return sql_target(url, 1 if request.param == "postgres-copy" else 1000)
    path = str(tmp_path / "orders")
    sink = IdempotentUpsertSink.delta(path, key_columns=["k"], version_column="v")
    return sink, lambda: {row["k"]: row["payload"] for row in read_delta(path).to_pylist()}


def test_null_and_nan_versions_lose_to_real_ones_across_batches(target: Target) -> None:
    sink, stored = target
    sink.apply(FIRST, 0)
    sink.apply(SECOND, 1)
    assert stored() == EXPECTED


def test_a_later_batch_without_the_version_column_is_refused(target: Target) -> None:
    sink, stored = target
    sink.apply(FIRST, 0)
    with pytest.raises(MissingColumnsError, match="'v'"):
        sink.apply(SECOND.drop_columns(["v"]), 1)
    with pytest.raises(MissingColumnsError, match="'k'"):
        sink.apply(SECOND.drop_columns(["k"]), 2)
    assert set(stored()) == {1, 2, 3, 4}


def test_a_later_batch_with_a_new_column_is_refused_as_a_first_one_would_be(
    target: Target,
) -> None:
    sink, stored = target
    sink.apply(FIRST, 0)
    wider = SECOND.append_column("note", pa.array(["n"] * SECOND.num_rows))
    with pytest.raises(MissingColumnsError, match="'note'"):
        sink.apply(wider, 1)
    assert stored() == {1: "1-null", 2: "2-nan", 3: "3-five", 4: "4-two"}
