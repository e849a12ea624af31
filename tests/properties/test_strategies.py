"""Properties of every strategy's ``apply``, over batches Hypothesis generates.

Streams of batches of records (redeliveries inside and across batches, replays of a batch under
its id) go through each strategy into real targets (SQLite, Delta tables on disk); afterwards
every record delivered is in the target exactly once. With a version column, each key holds the
newest real version delivered for it. A batch that reuses a batch id with other records must be
refused with a family error, having applied nothing. The budget is fixed (derandomized, a set
number of examples), so CI runs the same cases every time.
"""

from __future__ import annotations

import math
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest
import sqlalchemy as sa
from helpers.batches import source_rows
from helpers.delta import read_delta
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_share_eos import (
    BatchIdReusedError,
    CheckpointDedupStore,
    DeltaAppendSink,
    DeltaParticipant,
    FileDecisionLog,
    IdempotentUpsertSink,
    TwoPhaseCommitCoordinator,
)
from kafka_share_eos.strategies import BatchStrategy

pytestmark = pytest.mark.timeout(600)

BUDGET = settings(max_examples=15, deadline=None, derandomize=True, database=None,
                  suppress_health_check=[HealthCheck.too_slow])

Record = tuple[int, int]  # (partition, offset)

records = st.tuples(st.integers(0, 1), st.integers(0, 20))
# A stream: batches of records, each batch either new (the next id) or a replay of the last one.
streams = st.lists(
    st.tuples(st.lists(records, min_size=1, max_size=8), st.booleans()), min_size=1, max_size=5
)


def table(batch: list[Record]) -> pa.Table:
    return source_rows(
        topic="t", partition=[p for p, _ in batch], offset=[o for _, o in batch],
        amount=pa.array([10 * o + p for p, o in batch], pa.int64()),
    )


def batches(stream: list[tuple[list[Record], bool]]) -> list[tuple[int, list[Record]]]:
    """Batch ids as Spark gives them: a replay repeats the last batch's id and records."""
    planned: list[tuple[int, list[Record]]] = []
    for records_of, replay in stream:
        if replay and planned:
            planned.append(planned[-1])
        else:
            planned.append((len({i for i, _ in planned}), records_of))
    return planned


Target = tuple[BatchStrategy, Callable[[], list[Record]]]


def sql_upsert(work: Path) -> Target:
    url = f"sqlite:///{work / 'target.db'}"
    sink = IdempotentUpsertSink.sql(url, "records", create_table=True)

    def stored() -> list[Record]:
        with sa.create_engine(url).connect() as conn:
            return [tuple(r) for r in conn.execute(  # type: ignore[misc]
                sa.text('SELECT "partition", "offset" FROM records')
            ).all()]

    return sink, stored


def delta_rows(path: Path) -> Callable[[], list[Record]]:
    def stored() -> list[Record]:
        if not path.exists():
            return []
        rows = read_delta(str(path))
        return list(zip(rows["partition"].to_pylist(), rows["offset"].to_pylist(), strict=True))

    return stored


def delta_upsert(work: Path) -> Target:
    return IdempotentUpsertSink.delta(str(work / "target")), delta_rows(work / "target")


def dedup_store(work: Path) -> Target:
    sink = DeltaAppendSink(str(work / "target"))
    return CheckpointDedupStore(str(work / "ledger"), sink), delta_rows(work / "target")


def two_phase(work: Path) -> Target:
    coordinator = TwoPhaseCommitCoordinator(
        FileDecisionLog(str(work / "log")), [DeltaParticipant(str(work / "target"))], app_id="app"
    )
    return coordinator, delta_rows(work / "target")


TARGETS = {"upsert-sqlite": sql_upsert, "upsert-delta": delta_upsert, "dedup-delta": dedup_store,
           "two-phase-delta": two_phase}


@pytest.mark.parametrize("target", list(TARGETS))
@BUDGET
@given(stream=streams)
def test_every_record_delivered_is_applied_exactly_once(
    target: str, stream: list[tuple[list[Record], bool]]
) -> None:
    planned = batches(stream)
    with tempfile.TemporaryDirectory() as work:
        sink, stored = TARGETS[target](Path(work))
        for batch_id, batch in planned:
            sink.apply(table(batch), batch_id)
        counts = Counter(stored())
    delivered = {record for _, batch in planned for record in batch}
    assert set(counts) == delivered
    assert set(counts.values()) == {1}


@pytest.mark.parametrize("target", ["upsert-delta", "dedup-delta"])
@BUDGET
@given(first=st.lists(records, min_size=1, max_size=6),
       second=st.lists(records, min_size=1, max_size=6))
def test_a_batch_id_again_with_other_records_is_refused_with_nothing_applied(
    target: str, first: list[Record], second: list[Record]
) -> None:
    with tempfile.TemporaryDirectory() as work:
        sink, stored = TARGETS[target](Path(work))
        sink.apply(table(first), 0)
        before = Counter(stored())
        if set(second) <= set(first):
            sink.apply(table(second), 0)  # records already applied: absorbed as a replay
        else:
            with pytest.raises(BatchIdReusedError):
                sink.apply(table(second), 0)
        assert Counter(stored()) == before


versions = st.one_of(st.none(), st.just(math.nan), st.integers(0, 5).map(float))
versioned_rows = st.lists(st.tuples(st.integers(0, 4), versions), min_size=1, max_size=8)


def _newest(delivered: list[tuple[int, float | None]]) -> dict[int, float | None]:
    """Per key, the highest real version delivered; None when only null or NaN came."""
    newest: dict[int, float | None] = {}
    for key, version in delivered:
        real = version is not None and not math.isnan(version)
        current = newest.get(key)
        if key not in newest or (real and (current is None or version > current)):  # type: ignore[operator]
            newest[key] = version if real else None
    return newest


@pytest.mark.parametrize("backend", ["sqlite", "delta"])
@BUDGET
@given(stream=st.lists(versioned_rows, min_size=1, max_size=4))
def test_each_key_holds_its_newest_real_version(
    backend: str, stream: list[list[tuple[int, float | None]]]
) -> None:
    with tempfile.TemporaryDirectory() as work:
        if backend == "sqlite":
            url = f"sqlite:///{Path(work) / 'target.db'}"
            sink = IdempotentUpsertSink.sql(url, "versions", key_columns=["k"], version_column="v",
                                            create_table=True)
        else:
            sink = IdempotentUpsertSink.delta(str(Path(work) / "versions"), key_columns=["k"],
                                              version_column="v")
        for batch_id, rows in enumerate(stream):
            sink.apply(pa.table({"k": pa.array([k for k, _ in rows], pa.int64()),
                                 "v": pa.array([v for _, v in rows], pa.float64())}), batch_id)
        if backend == "sqlite":
            with sa.create_engine(url).connect() as conn:
                got = dict(conn.execute(sa.text("SELECT k, v FROM versions")).all())
        else:
            table_ = read_delta(str(Path(work) / "versions"))
            got = dict(zip(table_["k"].to_pylist(), table_["v"].to_pylist(), strict=True))
    cleaned = {k: None if v is None or math.isnan(v) else v for k, v in got.items()}
    assert cleaned == _newest([row for rows in stream for row in rows])

