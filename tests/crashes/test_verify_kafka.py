"""The chaos verifier on Apache Kafka: exactly once where several members share a partition.

Apache Kafka hands the records of one partition to several members of a share group at once,
which the embedded broker never does. Three shapes, every strategy: a one-partition topic read
by ``consumers=4`` in one query; two applications on one group and one one-partition topic, each
start holding a batch past its record lock so that Kafka hands its records to the other
application; two applications with ``consumers=2`` each on a four-partition topic. Each cell runs
once, crashed once at its point (or SIGKILLed), and must be exactly once, counted from the
sinks, with records taken by more than one member. CI runs one cell of each shape (the Postgres
upsert, two-phase commit and the dedup store; the embedded broker's CI cells cover the other
two strategies); the rest run under the ``full`` marker.

The Postgres upsert's cell of four consumers on one partition also runs, in CI, on each other
release of the version matrix, the newest patch of every supported minor release
(``KAFKA_VERSIONS``), on a cluster of that release. The rest of the Kafka tier runs on every
release with ``--kafka-versions=all`` (docs/development.md), under ``full``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_share_eos.proving_ground.launchers.kafka_cluster import KafkaCluster
from kafka_share_eos.proving_ground.launchers.kafka_dist import (
    KAFKA_VERSION_ENV,
    KAFKA_VERSIONS,
    kafka_version,
)
from kafka_share_eos.proving_ground.launchers.postgres import PostgresDatabases
from kafka_share_eos.proving_ground.verify import MatrixOptions, Mix, run_matrix
from kafka_share_eos.proving_ground.verify.matrix import CellResult

pytestmark = [pytest.mark.kafka, pytest.mark.timeout(900)]

Cell = tuple[str, str]


def _cells(cells: list[Cell], in_ci: set[Cell]) -> list[object]:
    return [pytest.param(cell, id="-".join(cell),
                         marks=() if cell in in_ci else (pytest.mark.full,)) for cell in cells]


def _run(cell: Cell, mix: Mix, partitions: int, records: int, postgres: PostgresDatabases,
         work: Path) -> CellResult:
    result = run_matrix(MatrixOptions(
        only=[cell], crashes=1, parallel=1, seed=31, records=records, partitions=partitions,
        mix=mix, broker="kafka", postgres_url=postgres.url, workdir=work,
    ))
    (ran,) = result.cells
    (run,) = ran.runs
    assert run.error is None, run.error
    assert ran.exercised, "the crash point never fired"
    assert (run.score.records, run.score.duplicates, run.score.losses) == (records, 0, 0)
    return ran


SHARED_PARTITION = [
    ("upsert-sqlite", "slot.after_poll"),
    ("upsert-postgres", "slot.during_ack"),
    ("upsert-delta", "slot.after_segment"),
    ("two-phase", "slot.reading_other"),
    ("dedup-delta", "random-kill"),
]


@pytest.mark.parametrize("cell", _cells(SHARED_PARTITION, {SHARED_PARTITION[1]}))
def test_four_consumers_on_one_partition_are_exactly_once(
    cell: Cell, postgres_server: PostgresDatabases, tmp_path: Path
) -> None:
    ran = _run(cell, Mix(consumers=4), 1, 40, postgres_server, tmp_path / "work")
    # The executors' consumers split the one partition's records between them.
    assert min(ran.members_acquiring()) >= 2, ran.runs[0].members


# The upsert into PostgreSQL, crashed while a slot acknowledges: the cell CI runs on the
# launcher's release.
CELL = SHARED_PARTITION[1]


@pytest.mark.parametrize("release", [v for v in KAFKA_VERSIONS if v != kafka_version()])
def test_four_consumers_on_one_partition_are_exactly_once_on_every_release(
    release: str, postgres_server: PostgresDatabases, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    started: list[str] = []
    start = KafkaCluster.start

    def start_and_note(cluster: KafkaCluster) -> KafkaCluster:
        started.append(cluster.version)
        return start(cluster)

    monkeypatch.setattr(KafkaCluster, "start", start_and_note)
    monkeypatch.setenv(KAFKA_VERSION_ENV, release)
    test_four_consumers_on_one_partition_are_exactly_once(CELL, postgres_server, tmp_path)
    assert started == [release]


HANDOFFS = [
    ("upsert-sqlite", "random-kill"),
    ("upsert-postgres", "sink.mid_write"),
    ("upsert-delta", "strategy.after_write"),
    ("two-phase", "2pc.after_decision"),
    ("dedup-delta", "dedup.before_sink"),
]


@pytest.mark.parametrize("cell", _cells(HANDOFFS, {HANDOFFS[3]}))
def test_two_applications_on_one_partition_are_exactly_once_through_handoffs(
    cell: Cell, postgres_server: PostgresDatabases, tmp_path: Path
) -> None:
    ran = _run(cell, Mix(pipelines=2, handoffs=True), 1, 60, postgres_server,
               tmp_path / "work")
    (run,) = ran.runs
    # Both applications took records of the one partition, and batches of both held some of
    # the same records: Kafka handed them on while one application's batch still held them.
    assert min(run.held.values()) > 0, run.held
    assert run.handoffs > 0, run.members


SPREAD = [
    ("upsert-sqlite", "slot.during_ack"),
    ("upsert-postgres", "random-kill"),
    ("upsert-delta", "slot.after_poll"),
    ("two-phase", "slot.after_segment"),
    ("dedup-delta", "slot.during_ack"),
]


@pytest.mark.parametrize("cell", _cells(SPREAD, {SPREAD[4]}))
def test_two_applications_with_two_consumers_each_are_exactly_once(
    cell: Cell, postgres_server: PostgresDatabases, tmp_path: Path
) -> None:
    ran = _run(cell, Mix(pipelines=2, consumers=2), 4, 60, postgres_server, tmp_path / "work")
    # The crashed application may restart after the other took every record, so only the
    # members, not both applications, are certain to have taken some.
    assert min(ran.members_acquiring()) >= 2, ran.runs[0].members
