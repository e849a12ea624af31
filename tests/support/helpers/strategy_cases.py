"""Every strategy, target and dead-letter sink, built for one test each: payments of one
partition whose record at offset ``o`` pays ``10 + o`` into account ``o % 7``, and how to read
back what each target applied.

A case reads its targets' offsets with repeats kept, so a record applied twice shows; the
two-phase cases also check the balances, which show a payment applied twice.
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

from helpers.accounts import INCREMENT, balances, create_accounts, expected_balances
from helpers.batches import source_rows
from helpers.delta import read_delta
from helpers.iceberg import catalog_config
from helpers.iceberg import offsets as iceberg_offsets
from kafka_share_eos import (
    CheckpointDedupStore,
    DeadLetterPolicy,
    DeltaAppendSink,
    DeltaDeadLetters,
    IcebergAppendSink,
    IcebergDeadLetters,
    IcebergParticipant,
    IdempotentUpsertSink,
    KafkaDeadLetters,
    KafkaTopicSink,
    SqlDeadLetters,
    TwoPhaseCommitCoordinator,
)
from kafka_share_eos.deadletter import DeadLetterSink
from kafka_share_eos.proving_ground.verify.kafka_targets import read_topic, source_coordinates
from kafka_share_eos.strategies.two_phase_commit import PrepareOn
from kafka_share_eos.twophase.delta import DeltaParticipant
from kafka_share_eos.twophase.postgres import PostgresParticipant
from kafka_share_eos.twophase.postgres_log import PostgresDecisionLog

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


def payment(offset: int) -> bytes:
    """The value of the record at ``offset`` that :func:`orders` describes:
    ``account:amount``."""
    return b"%d:%d" % (offset % 7, 10 + offset)


@dataclass
class Case:
    """A strategy and how to read back what it applied: each target's offsets, repeats kept,
    and the dead letters' offsets."""

    strategy: Any
    targets: list[Callable[[], list[int]]]
    letters: DeadLetterSink | None = None


Options = dict[str, Any]
Build = Callable[[pytest.FixtureRequest, Path, Options], Case]
"""A case from the test's fixtures, its folder and more options for the strategy under the
dead letters (a ``transform``)."""


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


def sqlite(request: pytest.FixtureRequest, tmp_path: Path, options: Options) -> Case:
    return upsert(f"sqlite:///{tmp_path / 'target.db'}")


def postgresql(request: pytest.FixtureRequest, tmp_path: Path, options: Options) -> Case:
    return upsert(request.getfixturevalue("postgres_url"))


def postgresql_executors(request: pytest.FixtureRequest, tmp_path: Path,
                         options: Options) -> Case:
    return upsert(request.getfixturevalue("postgres_url"), write_path="executors")


def delta(request: pytest.FixtureRequest, tmp_path: Path, options: Options) -> Case:
    path = str(tmp_path / "target")
    return Case(IdempotentUpsertSink.delta(path), [delta_offsets(path)])


def iceberg_table_offsets(config: dict[str, str], table: str) -> Callable[[], list[int]]:
    return lambda: [offset for _, offset in iceberg_offsets(config, table)]


def iceberg(request: pytest.FixtureRequest, tmp_path: Path, options: Options) -> Case:
    config = catalog_config(request, tmp_path, "sqlite")
    sink = IdempotentUpsertSink.iceberg("db.events", catalog=config, create_table=True)
    return Case(sink, [iceberg_table_offsets(config, "db.events")])


def dedup_store(request: pytest.FixtureRequest, tmp_path: Path, options: Options) -> Case:
    path = str(tmp_path / "appended")
    store = CheckpointDedupStore(str(tmp_path / "ledger"), DeltaAppendSink(path))
    return Case(store, [delta_offsets(path)])


def dedup_store_iceberg(request: pytest.FixtureRequest, tmp_path: Path,
                        options: Options) -> Case:
    config = catalog_config(request, tmp_path, "sqlite")
    sink = IcebergAppendSink("db.appended", catalog=config, create_table=True)
    store = CheckpointDedupStore(str(tmp_path / "ledger"), sink)
    return Case(store, [iceberg_table_offsets(config, "db.appended")])


RECORD = 'INSERT INTO paid ("offset") VALUES (:offset)'
"""A second Postgres effect, an append: a record applied twice is there twice."""


def two_phase(log: Callable[[str, Path], Any], prepare_on: PrepareOn = "driver",
              lake: str = "delta") -> Build:
    """A coordinator adding each payment to its account in PostgreSQL, with a Delta (or an
    Iceberg) table of every record; preparing on the executors, which take Postgres
    participants only, the records go to a Postgres table instead."""
    def build(request: pytest.FixtureRequest, tmp_path: Path, options: Options) -> Case:
        url = request.getfixturevalue("postgres_url")
        create_accounts(url)
        if prepare_on == "executors":
            engine = sa.create_engine(url)
            with engine.begin() as conn:
                conn.exec_driver_sql('CREATE TABLE paid ("offset" bigint NOT NULL)')
            engine.dispose()
            record: Any = PostgresParticipant(url, RECORD, name="paid")
            offsets = sql_offsets(url, "paid")
        elif lake == "iceberg":
            config = catalog_config(request, tmp_path, "sqlite")
            record = IcebergParticipant("db.payments", catalog=config)
            offsets = iceberg_table_offsets(config, "db.payments")
        else:
            path = str(tmp_path / "payments")
            record, offsets = DeltaParticipant(path), delta_offsets(path)
        coordinator = TwoPhaseCommitCoordinator(
            log(url, tmp_path), [PostgresParticipant(url, INCREMENT), record],
            app_id="pickled", prepare_on=prepare_on,
        )

        def applied() -> list[int]:
            # The balances show a payment applied twice; the second target every record.
            found = offsets()
            assert balances(url) == expected_balances(orders(range(len(set(found)))))
            return found

        return Case(coordinator, [applied])

    return build


def kafka_topic(request: pytest.FixtureRequest, tmp_path: Path, options: Options) -> Case:
    broker = request.getfixturevalue("embedded_broker")
    output = f"out-{uuid.uuid4().hex[:8]}"
    broker.create_topic(output, 1)
    sink = KafkaTopicSink(output, broker.client_config(), app_id=output)

    def written() -> list[int]:
        return sorted(source_coordinates(m)[1] for m in read_topic(
            broker.bootstrap_servers, output))

    return Case(sink, [written])


def dead_letters(sink: Callable[[pytest.FixtureRequest, Path], DeadLetterSink]) -> Build:
    def build(request: pytest.FixtureRequest, tmp_path: Path, options: Options) -> Case:
        letters = sink(request, tmp_path)
        url = f"sqlite:///{tmp_path / 'target.db'}"
        case = upsert(url, dead_letters=DeadLetterPolicy(letters, max_delivery_count=LIMIT),
                      **options)
        case.letters = letters
        return case

    return build


def kafka_letters(request: pytest.FixtureRequest, tmp_path: Path) -> DeadLetterSink:
    broker = request.getfixturevalue("embedded_broker")
    topic = f"dead-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 1)
    return KafkaDeadLetters(topic, broker.client_config())


CASES: dict[str, Build] = {
    "sqlite": sqlite,
    "postgresql": postgresql,
    "postgresql-executors": postgresql_executors,
    "delta": delta,
    "iceberg": iceberg,
    "dedup-store": dedup_store,
    "dedup-store-iceberg": dedup_store_iceberg,
    "two-phase-file-log": two_phase(lambda url, tmp: str(tmp / "decisions")),
    "two-phase-postgres-log": two_phase(lambda url, tmp: PostgresDecisionLog(url)),
    "two-phase-iceberg": two_phase(lambda url, tmp: str(tmp / "decisions"), lake="iceberg"),
    "kafka-topic": kafka_topic,
    "sqlite-dead-letters": dead_letters(
        lambda request, tmp: SqlDeadLetters(f"sqlite:///{tmp / 'letters.db'}")),
    "postgresql-dead-letters": dead_letters(
        lambda request, tmp: SqlDeadLetters(request.getfixturevalue("postgres_url"))),
    "delta-dead-letters": dead_letters(lambda request, tmp: DeltaDeadLetters(str(tmp / "dl"))),
    "kafka-dead-letters": dead_letters(kafka_letters),
    "iceberg-dead-letters": dead_letters(lambda request, tmp: IcebergDeadLetters(
        "dl.letters", catalog=catalog_config(request, tmp, "sqlite"))),
}
"""Every strategy, target and dead-letter sink by name."""
