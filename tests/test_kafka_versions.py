"""One exactly-once cell on every supported Apache Kafka release, in CI.

The chaos verifier's cell of four consumers on one partition (the PostgreSQL upsert, crashed
while a slot acknowledges; tests/test_verify_kafka.py) runs in CI on the launcher's release.
Here the same cell runs on each other release of the version matrix, the newest patch of every
supported minor release (``KAFKA_VERSIONS``), on a cluster of that release: records shared by
several members of a share group, a crash, and every record applied once. The rest of the Kafka
tier runs on every release with ``--kafka-versions=all`` (docs/development.md), under ``full``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_verify_kafka import SHARED_PARTITION
from test_verify_kafka import (
    test_four_consumers_on_one_partition_are_exactly_once as four_consumers_on_one_partition,
)

from kafka_share_eos.proving_ground.launchers.kafka_cluster import KafkaCluster
from kafka_share_eos.proving_ground.launchers.kafka_dist import (
    KAFKA_VERSION_ENV,
    KAFKA_VERSIONS,
    kafka_version,
)
from kafka_share_eos.proving_ground.launchers.postgres import PostgresDatabases

pytestmark = [pytest.mark.kafka, pytest.mark.timeout(900)]

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
    four_consumers_on_one_partition(CELL, postgres_server, tmp_path)
    assert started == [release]
