"""Every strategy, every target and every dead-letter sink run on by a pickled copy in a new
process, as a Spark Connect server runs the strategy its client pickled.

The strategy applies batch 0 here; a copy pickled with PySpark's cloudpickle (its connections,
clients and table handles left behind) is loaded in a new Python process, which replays batch 0
(a restarted query runs its last batch again) and applies batch 1, whose first records batch 0
held too. Each target then holds every record exactly once, and each dead letter once.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import sqlalchemy as sa
from helpers.accounts import balances, create_accounts, expected_balances
from helpers.batches import source_rows
from helpers.delta import read_delta
from helpers.pickled import apply_elsewhere

from kafka_share_eos import (
    CheckpointDedupStore,
    DeadLetterPolicy,
    DeltaAppendSink,
    DeltaDeadLetters,
    IdempotentUpsertSink,
    KafkaDeadLetters,
    KafkaTopicSink,
    SqlDeadLetters,
    TwoPhaseCommitCoordinator,
)
from kafka_share_eos.deadletter import DeadLetterSink
from kafka_share_eos.proving_ground.verify.kafka_targets import read_topic, source_coordinates
from kafka_share_eos.twophase.delta import DeltaParticipant
from kafka_share_eos.twophase.postgres import PostgresParticipant
from kafka_share_eos.twophase.postgres_log import PostgresDecisionLog

pytestmark = pytest.mark.timeout(300)

INCREMENT = "UPDATE accounts SET balance = balance + :amount WHERE id = :account"
LIMIT = 3
"""A record delivered this many times is a dead letter (the dead-letter cases' policy)."""


def orders(offsets: range, bad: tuple[int, ...] = ()) -> pa.Table:
    """Records of partition 0, each with an amount of its own for one of 7 accounts; those at
    ``bad`` offsets delivered :data:`LIMIT` times."""
    return source_rows(
        topic="orders", partition=0, offset=list(offsets),
        key=[b"k%d" % o for o in offsets], value=[b"v%d" % o for o in offsets],
        account=pa.array([o % 7 for o in offsets], pa.int32()),
        amount=pa.array([10 + o for o in offsets], pa.int64()),
        deliveryCount=[LIMIT if o in bad else 1 for o in offsets],
    )


FIRST, SECOND = range(0, 6), range(3, 10)
BAD = (2, 8)


@dataclass
class Case:
    """A strategy and how to read back what it applied: each target's offsets, repeats kept,
    and the dead letters' offsets."""

    strategy: Any
    targets: list[Callable[[], list[int]]]
    letters: DeadLetterSink | None = None


def sql_offsets(url: str, table: str = "events") -> Callable[[], list[int]]:
    def read() -> list[int]:
        engine = sa.create_engine(url)
        with engine.connect() as conn:
            found = conn.execute(sa.text(f'SELECT "offset" FROM {table}')).scalars().all()
        engine.dispose()
        return sorted(found)
    return read


def delta_offsets(path: str) -> Callable[[], list[int]]:
    return lambda: sorted(read_delta(path, 'SELECT "offset" FROM t')["offset"].to_pylist())


def upsert(url: str, **options: Any) -> Case:
    sink = IdempotentUpsertSink.sql(url, "events", create_table=True, **options)
    return Case(sink, [sql_offsets(url)])


def sqlite(request: pytest.FixtureRequest, tmp_path: Path) -> Case:
    return upsert(f"sqlite:///{tmp_path / 'target.db'}")


def postgresql(request: pytest.FixtureRequest, tmp_path: Path) -> Case:
    return upsert(request.getfixturevalue("postgres_url"))


def postgresql_executors(request: pytest.FixtureRequest, tmp_path: Path) -> Case:
    return upsert(request.getfixturevalue("postgres_url"), write_path="executors")


def delta(request: pytest.FixtureRequest, tmp_path: Path) -> Case:
    path = str(tmp_path / "target")
    return Case(IdempotentUpsertSink.delta(path), [delta_offsets(path)])


def dedup_store(request: pytest.FixtureRequest, tmp_path: Path) -> Case:
    path = str(tmp_path / "appended")
    store = CheckpointDedupStore(str(tmp_path / "ledger"), DeltaAppendSink(path))
    return Case(store, [delta_offsets(path)])


def two_phase(log: Callable[[str, Path], Any]) -> Callable[[pytest.FixtureRequest, Path], Case]:
    def build(request: pytest.FixtureRequest, tmp_path: Path) -> Case:
        url = request.getfixturevalue("postgres_url")
        create_accounts(url)
        path = str(tmp_path / "payments")
        coordinator = TwoPhaseCommitCoordinator(
            log(url, tmp_path), [PostgresParticipant(url, INCREMENT), DeltaParticipant(path)],
            app_id="pickled",
        )

        def applied() -> list[int]:
            # The balances show a payment applied twice; the Delta table every record.
            offsets = delta_offsets(path)()
            assert balances(url) == expected_balances(orders(range(len(set(offsets)))))
            return offsets

        return Case(coordinator, [applied])

    return build


def kafka_topic(request: pytest.FixtureRequest, tmp_path: Path) -> Case:
    broker = request.getfixturevalue("embedded_broker")
    output = request.getfixturevalue("share_topic").topic
    sink = KafkaTopicSink(output, broker.client_config(), app_id=output)

    def written() -> list[int]:
        return sorted(source_coordinates(m)[1] for m in read_topic(
            broker.bootstrap_servers, output))

    return Case(sink, [written])


def dead_letters(sink: Callable[[pytest.FixtureRequest, Path], DeadLetterSink],
                 ) -> Callable[[pytest.FixtureRequest, Path], Case]:
    def build(request: pytest.FixtureRequest, tmp_path: Path) -> Case:
        letters = sink(request, tmp_path)
        url = f"sqlite:///{tmp_path / 'target.db'}"
        case = upsert(url, dead_letters=DeadLetterPolicy(letters, max_delivery_count=LIMIT))
        case.letters = letters
        return case

    return build


def kafka_letters(request: pytest.FixtureRequest, tmp_path: Path) -> DeadLetterSink:
    broker = request.getfixturevalue("embedded_broker")
    topic = f"dead-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 1)
    return KafkaDeadLetters(topic, broker.client_config())


CASES: dict[str, Callable[[pytest.FixtureRequest, Path], Case]] = {
    "sqlite": sqlite,
    "postgresql": postgresql,
    "postgresql-executors": postgresql_executors,
    "delta": delta,
    "dedup-store": dedup_store,
    "two-phase-file-log": two_phase(lambda url, tmp: str(tmp / "decisions")),
    "two-phase-postgres-log": two_phase(lambda url, tmp: PostgresDecisionLog(url)),
    "kafka-topic": kafka_topic,
    "sqlite-dead-letters": dead_letters(
        lambda request, tmp: SqlDeadLetters(f"sqlite:///{tmp / 'letters.db'}")),
    "postgresql-dead-letters": dead_letters(
        lambda request, tmp: SqlDeadLetters(request.getfixturevalue("postgres_url"))),
    "delta-dead-letters": dead_letters(lambda request, tmp: DeltaDeadLetters(str(tmp / "dl"))),
    "kafka-dead-letters": dead_letters(kafka_letters),
}


@pytest.mark.parametrize("kind", CASES)
def test_a_copy_in_a_new_process_applies_every_record_exactly_once(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    case = CASES[kind](request, tmp_path)
    bad = BAD if case.letters is not None else ()
    first, second = orders(FIRST, bad), orders(SECOND, bad)

    before = case.strategy.apply(first, 0)
    replayed, later = apply_elsewhere(case.strategy, [(first, 0), (second, 1)])

    expected = [o for o in range(10) if o not in bad]
    for target in case.targets:
        assert target() == expected
    assert before.rows_written + replayed.rows_written + later.rows_written == len(expected)
    assert replayed.rows_written == 0
    if case.letters is not None:
        assert sorted(case.letters.read()["offset"].to_pylist()) == list(BAD)
        case.letters.close()
