"""Exactly once under kill -9 in a Spark Connect session, through the chaos verifier.

Each cell runs its pipeline as a client of a Connect server of its own, holds a batch in the
middle of the strategy inside the server's ``foreachBatch`` worker, and kills there: the server
(restarted on the same URL, a new client starting the query again on the same checkpoint), the
client (the new client starts the query while the orphaned one still runs; a second kill, when
records are left for it, lets the orphaned query end before the next client starts), or the
worker. Every record must land exactly once, counted from the
sinks, on the embedded broker and on Apache Kafka with four consumers on one partition. CI runs
one Connect cell (tests/proving_ground/verify/test_connect.py); this matrix runs under
``full``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_share_eos.proving_ground.launchers.postgres import PostgresDatabases
from kafka_share_eos.proving_ground.verify import MatrixOptions, Mix, run_matrix
from kafka_share_eos.proving_ground.verify.points import (
    CONNECT_CLIENT_KILL,
    CONNECT_SERVER_KILL,
    CONNECT_WORKER_KILL,
)
from kafka_share_eos.proving_ground.verify.spec import RunResult

pytestmark = [pytest.mark.full, pytest.mark.connect, pytest.mark.timeout(900)]

CELLS = [
    ("two-phase", CONNECT_SERVER_KILL),
    ("upsert-postgres", CONNECT_CLIENT_KILL),
    ("dedup-delta", CONNECT_WORKER_KILL),
]
RECORDS = 40


def _run(cell: tuple[str, str], broker: str, postgres: PostgresDatabases, work: Path
         ) -> RunResult:
    on_kafka = broker == "kafka"
    crashes = 2 if cell[1] == CONNECT_CLIENT_KILL else 1
    result = run_matrix(MatrixOptions(
        only=[cell], crashes=crashes, seed=41, records=RECORDS, broker=broker,  # type: ignore[arg-type]
        partitions=1 if on_kafka else 3, mix=Mix(consumers=4) if on_kafka else Mix(),
        postgres_url=postgres.url, workdir=work,
    ))
    (ran,) = result.cells
    (run,) = ran.runs
    assert run.error is None, run.error
    assert (run.score.records, run.score.duplicates, run.score.losses) == (RECORDS, 0, 0)
    if cell[1] == CONNECT_CLIENT_KILL:
        # The first kill's orphaned query, let go as the new client starts, often drains what
        # is left before Spark stops it, leaving no batch for the second kill.
        assert run.connect["orphans_overlapped"] == 1, run.connect
        assert 1 <= run.crashes <= crashes, run.connect
    else:
        assert run.crashes == crashes, f"{run.crashes} of {crashes} kills struck mid-strategy"
    return run


@pytest.mark.parametrize("cell", CELLS, ids=["-".join(cell) for cell in CELLS])
def test_connect_kills_on_the_embedded_broker_are_exactly_once(
    cell: tuple[str, str], postgres_server: PostgresDatabases, tmp_path: Path
) -> None:
    _run(cell, "embedded", postgres_server, tmp_path / "work")


@pytest.mark.kafka
@pytest.mark.parametrize("cell", CELLS, ids=["-".join(cell) for cell in CELLS])
def test_connect_kills_with_four_consumers_on_one_kafka_partition_are_exactly_once(
    cell: tuple[str, str], postgres_server: PostgresDatabases, tmp_path: Path
) -> None:
    run = _run(cell, "kafka", postgres_server, tmp_path / "work")
    # The server's executor tasks split the one partition's records between their consumers.
    assert sum(1 for n in run.members.values() if n) >= 2, run.members
