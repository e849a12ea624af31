"""How the verifier turns records into effect rows and judges what landed in the sinks."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pytest
from helpers.batches import source_rows

from kafka_share_eos.proving_ground.verify.records import (
    Kind,
    PlannedRecord,
    PoisonRecordError,
    effect_rows,
    plan_records,
)
from kafka_share_eos.proving_ground.verify.score import score


def planned_rows(records: list[PlannedRecord]) -> pa.Table:
    """Rows as the kafka-share source hands them over, at offsets 0.. of partition 0."""
    return source_rows(key=[r.key for r in records], value=[r.value for r in records],
                       topic="t", partition=0, offset=range(len(records)))


def test_plan_is_reproducible_and_holds_each_bad_kind_once() -> None:
    plan = plan_records(20, "seed", bad_records=True)
    assert plan == plan_records(20, "seed", bad_records=True)
    assert plan != plan_records(20, "other", bad_records=True)
    assert sorted(r.id for r in plan) == list(range(24))
    assert Counter(r.kind for r in plan) == {Kind.NORMAL: 20, Kind.NULL_KEY: 1,
                                            Kind.INVALID_PAYLOAD: 1, Kind.OVERSIZED: 1,
                                            Kind.POISON: 1}


def test_effect_rows_keep_every_readable_and_unreadable_record() -> None:
    records = [
        PlannedRecord(1, 2, 30),
        PlannedRecord(2, 3, 40, Kind.NULL_KEY),
        PlannedRecord(3, 4, 50, Kind.INVALID_PAYLOAD),
        PlannedRecord(4, 5, 60, Kind.OVERSIZED),
    ]
    rows = effect_rows(planned_rows(records), poison_fails=True).to_pylist()
    assert [(r["offset"], r["id"], r["account"], r["amount"], r["valid"]) for r in rows] == [
        (0, 1, 2, 30, True),
        (1, 2, 3, 40, True),
        (2, 3, None, 0, False),
        (3, 4, 5, 60, True),
    ]
    assert [r.expected_amount for r in records] == [30, 40, 0, 60]


def test_a_poison_record_fails_every_time_it_is_applied() -> None:
    batch = planned_rows([PlannedRecord(1, 2, 30), PlannedRecord(7, 1, 5, Kind.POISON)])
    with pytest.raises(PoisonRecordError, match="id=7 at partition/offset \\(0, 1\\)"):
        effect_rows(batch, poison_fails=True)
    assert effect_rows(batch, poison_fails=False).num_rows == 2


def test_score_counts_extra_applications_losses_and_strangers() -> None:
    produced = {(0, n): PlannedRecord(n, 0, 1) for n in range(4)}
    landed = {
        "first": Counter({(0, 0): 1, (0, 1): 3, (0, 2): 1}),
        "second": Counter({(0, 0): 1, (0, 1): 1, (0, 2): 1, (0, 3): 1, (9, 9): 1}),
    }
    result = score(landed, produced, dead_lettered=frozenset())
    assert (result.records, result.duplicates, result.losses) == (4, 3, 1)
    assert result.per_sink == {"first": (2, 1), "second": (1, 0)}
    assert not result.ok

    dead = score(landed, produced, dead_lettered=frozenset({(0, 3)}))
    assert (dead.losses, dead.dead_lettered) == (0, 1)
    # Applied in "second" and dead-lettered: handling the letter would apply it twice.
    assert dead.per_sink == {"first": (2, 0), "second": (2, 0)}


def test_exactly_once_scores_ok() -> None:
    produced = {(1, n): PlannedRecord(n, 0, 1) for n in range(3)}
    result = score({"sink": Counter(dict.fromkeys(produced, 1))}, produced, frozenset())
    assert result.ok
