"""A rolling upgrade of a three-node Apache Kafka from 4.3.1 to the launcher's release under a
running pipeline, as the verifier's ``rolling-upgrade`` fault: one node at a time stopped with
SIGTERM and started on the new release, the stream applying records after each, then the
cluster's features raised with kafka-features.sh. One partition read one record a batch, so the
stream outlasts the roll; it must end exactly once with one start of its pipeline."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_share_eos.proving_ground.launchers.kafka_dist import kafka_version
from kafka_share_eos.proving_ground.verify import MatrixOptions, run_matrix
from kafka_share_eos.proving_ground.verify.outages import OUTAGES, brokers_for
from kafka_share_eos.proving_ground.verify.outages.upgrades import APPLIED, UPGRADE_FROM

RECORDS = 200


def test_a_rolling_upgrade_run_gets_three_nodes_of_its_own_on_the_old_release() -> None:
    outage = OUTAGES["rolling-upgrade"]
    assert (outage.kafka_version, outage.brokers) == (UPGRADE_FROM, 3)
    assert kafka_version() != UPGRADE_FROM
    # The matrix's own cluster is not upgraded: it needs only what the other faults need.
    assert brokers_for(["rolling-upgrade"]) == 1
    assert brokers_for(["rolling-upgrade", "broker-restart"]) == 3


@pytest.mark.kafka
@pytest.mark.full
@pytest.mark.timeout(1200)
def test_a_rolling_upgrade_of_kafka_under_a_running_pipeline_ends_exactly_once(
    tmp_path: Path,
) -> None:
    result = run_matrix(MatrixOptions(
        targets=["upsert-sqlite"], points=(), faults=["rolling-upgrade"], seed=48,
        broker="kafka", records=RECORDS, per_trigger=1, partitions=1, workdir=tmp_path / "work",
    ))
    (cell,) = result.cells
    (run,) = cell.runs
    assert run.error is None, run.error
    assert run.fault is not None and run.fault["error"] is None, run.fault
    assert (run.score.records, run.score.duplicates, run.score.losses) == (RECORDS, 0, 0)
    assert (run.starts, run.failed_starts) == (1, 0)
    did, release = run.fault["did"], kafka_version()
    # Each of the three nodes on the new release, then the finalisation: records applied
    # after every step, so the pipeline ran through all of them.
    assert did.count(APPLIED) == 4, did
    assert did.count(f"on {release}") == 3, did
    assert f"metadata.version 4.3-IV0 -> {release[:3]}" in did, did
    assert "share.version 1 -> 2" in did, did
