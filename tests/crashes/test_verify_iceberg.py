"""The chaos verifier's Iceberg targets, for real: Spark pipelines writing an Iceberg table
through ``IdempotentUpsertSink.iceberg``, the checkpoint-dedup store's ``IcebergAppendSink`` and
two-phase commit with an ``IcebergParticipant`` (beside a Postgres increment), SIGKILLed at a
crash point, restarted, and counted from the table itself.

CI runs each target once on the embedded broker, crashed once at a point of its own. Under the
``full`` marker: the same cells with the warehouse on S3, on Apache Kafka with four consumers on
one partition, and two applications on one group and one table, each start holding a batch past
its record lock so that the broker hands its records to the other application.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_share_eos.proving_ground.launchers.postgres import PostgresDatabases
from kafka_share_eos.proving_ground.launchers.s3_server import SECRET_KEY
from kafka_share_eos.proving_ground.verify import MatrixOptions, Mix, run_matrix
from kafka_share_eos.proving_ground.verify.matrix import CellResult

pytestmark = pytest.mark.timeout(900)

Cell = tuple[str, str]

CELLS = [
    ("upsert-iceberg", "sink.mid_write"),
    ("dedup-iceberg", "dedup.after_sink"),
    ("two-phase-iceberg", "2pc.between_commits"),
]


def _run(cell: Cell, postgres: PostgresDatabases, work: Path, *, records: int = 40,
         **options: object) -> CellResult:
    result = run_matrix(MatrixOptions(
        only=[cell], crashes=1, parallel=1, seed=41, records=records,
        postgres_url=postgres.url, workdir=work, **options,  # type: ignore[arg-type]
    ))
    (ran,) = result.cells
    (run,) = ran.runs
    assert run.error is None, run.error
    assert ran.exercised, "the crash point never fired"
    assert (run.score.records, run.score.duplicates, run.score.losses) == (records, 0, 0)
    # Both counts of the table, and the increment's, saw every record once.
    assert {"iceberg", "iceberg writes"} <= set(run.score.per_sink)
    return ran


@pytest.mark.parametrize("cell", CELLS, ids="-".join)
def test_each_iceberg_target_crashed_at_its_own_point_is_exactly_once(
    cell: Cell, postgres_server: PostgresDatabases, tmp_path: Path
) -> None:
    _run(cell, postgres_server, tmp_path / "work")


@pytest.mark.full
@pytest.mark.parametrize("cell", CELLS, ids="-".join)
def test_each_iceberg_target_with_its_warehouse_on_s3_is_exactly_once(
    cell: Cell, postgres_server: PostgresDatabases, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    _run(cell, postgres_server, work, storage="s3")
    (config,) = work.glob("*/config.json")
    assert json.loads(config.read_text())["store_root"].startswith("s3://")
    # The warehouse is on the store: locally only the catalog's database, and no key anywhere.
    assert not (config.parent / "iceberg").exists()
    assert (config.parent / "iceberg-catalog.db").exists()
    for path in config.parent.rglob("*"):
        if path.is_file():
            assert SECRET_KEY.encode() not in path.read_bytes(), path


# The cells of the 20-run loops on Apache Kafka (docs/verify.md), whose points fired in every
# run; with four consumers on one partition, a run of 20 records once drained before its crash
# at dedup.after_sink, and once before its crash at 2pc.between_commits.
KAFKA_CELLS = [
    ("upsert-iceberg", "sink.mid_write"),
    ("dedup-iceberg", "dedup.after_sink"),
    ("two-phase-iceberg", "2pc.after_decision"),
]


@pytest.mark.full
@pytest.mark.kafka
@pytest.mark.parametrize("cell", KAFKA_CELLS, ids="-".join)
def test_each_iceberg_target_with_four_consumers_on_one_kafka_partition_is_exactly_once(
    cell: Cell, postgres_server: PostgresDatabases, tmp_path: Path
) -> None:
    ran = _run(cell, postgres_server, tmp_path / "work", broker="kafka", partitions=1,
               mix=Mix(consumers=4))
    assert min(ran.members_acquiring()) >= 2, ran.runs[0].members


HANDOFFS = [
    ("upsert-iceberg", "random-kill"),
    ("dedup-iceberg", "dedup.before_sink"),
    ("two-phase-iceberg", "2pc.after_decision"),
]


@pytest.mark.full
@pytest.mark.parametrize("broker", ["embedded", pytest.param("kafka", marks=pytest.mark.kafka)])
@pytest.mark.parametrize("cell", HANDOFFS, ids="-".join)
def test_two_applications_on_one_iceberg_table_are_exactly_once_through_handoffs(
    cell: Cell, broker: str, postgres_server: PostgresDatabases, tmp_path: Path
) -> None:
    ran = _run(cell, postgres_server, tmp_path / "work", records=60, broker=broker,
               partitions=1 if broker == "kafka" else 3, mix=Mix(pipelines=2, handoffs=True))
    (run,) = ran.runs
    assert min(run.held.values()) > 0, run.held
    assert run.handoffs > 0, run.members
