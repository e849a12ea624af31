"""The kafka-share source on a secured cluster (SASL_SSL, SCRAM-SHA-512 over TLS, ACLs): with its
credentials, passed as ``kafka.*`` options, a pipeline runs exactly once; refused, it fails with
one clear error naming what was refused, and no password shows anywhere."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from confluent_kafka import Producer
from helpers.batches import source_rows
from helpers.scripts import run_python
from helpers.streaming import Offsets, run_available_now, share_stream

from kafka_share_eos import KafkaAccessError, KafkaDeadLetters
from kafka_share_eos.deadletter.letters import Rejection, letters
from kafka_share_eos.proving_ground.launchers.kafka_cluster import KafkaCluster
from kafka_share_eos.proving_ground.launchers.kafka_security import SaslSsl
from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic
from kafka_share_eos.source.options import SourceOptions

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.kafka, pytest.mark.timeout(300)]

RECORDS = 60


@pytest.fixture(scope="module")
def secured() -> Iterator[KafkaCluster]:
    with KafkaCluster(security=SaslSsl()) as kafka:
        yield kafka


def secured_topic(kafka: KafkaCluster) -> tuple[ShareTopic, list[tuple[int, int]]]:
    """A topic of ``RECORDS`` records and a share group reading it from the start (set up by
    the admin), as a ShareTopic and the records' (partition, offset)."""
    name = f"jobs-{uuid.uuid4().hex[:8]}"
    kafka.create_topic(name, 2)
    producer = Producer(kafka.client_config())
    for n in range(RECORDS):
        producer.produce(name, b"%d" % n, partition=n % 2)
    assert producer.flush(30) == 0
    written = sorted((n % 2, n // 2) for n in range(RECORDS))
    group = f"{name}-eos"
    kafka.set_group_config(group, {"share.auto.offset.reset": "earliest",
                                   "share.isolation.level": "read_committed"})
    return ShareTopic(kafka.bootstrap_servers, name, 2, group), written


def secured_admin_password(kafka: KafkaCluster) -> str:
    assert kafka.security is not None
    return kafka.security.admin_password


def security_options(kafka: KafkaCluster, user: str, password: str) -> dict[str, str]:
    return {f"kafka.{key}": str(value)
            for key, value in kafka.user_config(user, password).items()
            if key != "bootstrap.servers"}


def test_with_its_credentials_a_pipeline_runs_exactly_once(
    spark: SparkSession, secured: KafkaCluster, tmp_path: Path
) -> None:
    topic, written = secured_topic(secured)
    secured.add_user("pipeline", "pipeline-secret")
    secured.allow("pipeline", "TOPIC", topic.topic, "READ", "DESCRIBE")
    secured.allow("pipeline", "GROUP", topic.group_id, "READ", "DESCRIBE", "DESCRIBE_CONFIGS")
    sink = Offsets()
    df = share_stream(spark, topic, tmp_path / "journal", availableNowIdleMs="3000",
                      **security_options(secured, "pipeline", "pipeline-secret"))
    run_available_now(df, tmp_path / "checkpoint", sink)
    assert sorted(sink.seen) == written
    assert set(sink.seen.values()) == {1}
    assert_nowhere(b"pipeline-secret", tmp_path)
    status = run_python("-m", "kafka_share_eos.cli.main", "status", "--journal",
                        str(tmp_path / "journal"))
    assert "60" in status.stdout and "pipeline-secret" not in status.stdout + status.stderr
    options = SourceOptions.parse({
        "subscribe": topic.topic, "journalPath": str(tmp_path / "journal"),
        "kafka.bootstrap.servers": topic.bootstrap_servers,
        "kafka.share.group.id": topic.group_id,
        **security_options(secured, "pipeline", "pipeline-secret"),
    })
    assert "pipeline-secret" not in repr(options)


def assert_nowhere(secret: bytes, *directories: Path) -> None:
    """No file under ``directories`` (journal, metrics, status, checkpoint) holds ``secret``."""
    for directory in directories:
        for path in directory.rglob("*"):
            if path.is_file():
                assert secret not in path.read_bytes(), path


@pytest.mark.parametrize(
    ("case", "grants", "refused"),
    [
        ("wrong-password", {"TOPIC": ("READ", "DESCRIBE"),
                            "GROUP": ("READ", "DESCRIBE", "DESCRIBE_CONFIGS")},
         "refused the sign-in of user 'user-wrong-password'"),
        pytest.param(
            "no-read-on-group", {"TOPIC": ("READ", "DESCRIBE"), "GROUP": ("DESCRIBE_CONFIGS",)},
            "user 'user-no-read-on-group' may not read share group", marks=pytest.mark.full),
        pytest.param(
            "no-read-on-topic", {"GROUP": ("READ", "DESCRIBE", "DESCRIBE_CONFIGS")},
            "user 'user-no-read-on-topic' may not read topic(s) jobs-", marks=pytest.mark.full),
    ],
)
def test_a_refused_pipeline_fails_naming_what_was_refused_and_takes_nothing(
    spark: SparkSession, secured: KafkaCluster, tmp_path: Path, case: str,
    grants: dict[str, tuple[str, ...]], refused: str,
) -> None:
    topic, written = secured_topic(secured)
    user, password = f"user-{case}", f"{case}-Pa55word"
    secured.add_user(user, password)
    names = {"TOPIC": topic.topic, "GROUP": topic.group_id}
    for resource, operations in grants.items():
        secured.allow(user, resource, names[resource], *operations)
    given = "not-the-password" if case == "wrong-password" else password
    sink = Offsets()
    # Refused at load() where the source describes its group, else by the first poll.
    with pytest.raises(Exception) as failure:
        df = share_stream(spark, topic, tmp_path / "journal", availableNowIdleMs="3000",
                          **security_options(secured, user, given))
        run_available_now(df, tmp_path / "checkpoint", sink)
    message = str(failure.value)
    assert "KafkaAccessError" in message and refused in message, message
    assert password not in message and given not in message
    assert sink.seen == Counter()
    assert_nowhere(given.encode(), tmp_path)
    # Nothing was acknowledged: the group still holds every record for a principal allowed.
    admin = security_options(secured, "admin", secured_admin_password(secured))
    df = share_stream(spark, topic, tmp_path / "journal-admin", availableNowIdleMs="3000",
                      **admin)
    run_available_now(df, tmp_path / "checkpoint-admin", sink)
    assert sorted(sink.seen) == written and set(sink.seen.values()) == {1}


@pytest.mark.parametrize("writes", [False, True], ids=["no-write-acl", "write-acl"])
def test_dead_letters_go_only_to_a_topic_the_user_may_write(
    secured: KafkaCluster, writes: bool
) -> None:
    topic = f"letters-{uuid.uuid4().hex[:8]}"
    secured.create_topic(topic, 1)
    user = f"letters-{'writer' if writes else 'reader'}"
    secured.add_user(user, f"{user}-Pa55word")
    secured.allow(user, "TOPIC", topic, *(("WRITE", "DESCRIBE") if writes else ("DESCRIBE",)))
    rows = source_rows(topic="jobs", partition=0, offset=[7], key=[b"k"], value=[b"bad"])
    table = letters(rows, [Rejection(0, "write", ValueError("refused by the target"))],
                    strategy="test", batch_id=3)
    sink = KafkaDeadLetters(topic, secured.user_config(user, f"{user}-Pa55word"))
    try:
        if writes:
            assert sink.write(table) == 1
        else:
            with pytest.raises(KafkaAccessError, match=rf"may not write topic\(s\) {topic}.*"
                               rf"grant it WRITE") as refused:
                sink.write(table)
            assert f"{user}-Pa55word" not in str(refused.value)
    finally:
        sink.close()
    landed = KafkaDeadLetters(topic, secured.client_config()).read()
    assert landed.column("offset").to_pylist() == ([7] if writes else [])
