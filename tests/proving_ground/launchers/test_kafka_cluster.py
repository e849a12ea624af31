"""The Apache Kafka launcher: fetched once, started on free ports, stopped whatever happens.

``kafka-share-eos broker --kafka`` runs as a real process: its first line is the bootstrap
servers, the share group named with ``--group`` is configured, a consumer reads through it, and
every JVM it started is gone after SIGTERM, and after a SIGKILL of the command itself. Without
Java or Maven, or with a version Maven cannot fetch, it says so in one line.
"""

from __future__ import annotations

import base64
import os
import shutil
import signal
import subprocess
from pathlib import Path

import psutil
import pytest
from confluent_kafka.admin import AdminClient
from helpers import consume, count_at_least, produce, share_consumer
from helpers.processes import wait_until
from helpers.scripts import CLI, CLI_ENV

from kafka_share_eos.proving_ground.launchers.kafka_dist import KAFKA_VERSION_ENV
from kafka_share_eos.proving_ground.launchers.processes import processes_mentioning
from kafka_share_eos.sharegroup.group_config import describe_share_group

pytestmark = [pytest.mark.kafka, pytest.mark.timeout(240)]



def _java_children(pid: int) -> list[int]:
    """Pids of the Kafka JVMs whose parent is ``pid``."""
    return processes_mentioning("kafka.Kafka", parent=pid)


def _wait_gone(pids: list[int]) -> None:
    wait_until(lambda: not any(psutil.pid_exists(pid) for pid in pids), 30,
               f"the Kafka JVMs {pids} to exit")


def _start(*args: str) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen([CLI, "broker", "--kafka", *args], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=CLI_ENV)
    assert process.stdout is not None
    first = process.stdout.readline().strip()
    assert first, process.communicate(timeout=30)[1]
    return process, first


def test_three_brokers_serve_a_share_group_and_stop_on_sigterm() -> None:
    process, bootstrap = _start("--brokers", "3", "--topic", "jobs:2", "--group", "jobs-eos",
                                "--lock-ms", "15000")
    try:
        jvms = _java_children(process.pid)
        assert len(jvms) == 3
        assert len(bootstrap.split(",")) == 3
        admin = AdminClient({"bootstrap.servers": bootstrap})
        metadata = admin.list_topics("jobs", timeout=30)
        assert len(metadata.brokers) == 3
        assert {len(p.replicas) for p in metadata.topics["jobs"].partitions.values()} == {3}
        settings = describe_share_group({"bootstrap.servers": bootstrap}, "jobs-eos",
                                        admin=admin)
        assert settings is not None
        assert (settings.auto_offset_reset, settings.isolation_level,
                settings.record_lock_duration_ms) == ("earliest", "read_committed", 15000)
        del admin
        values = [b"job-%d" % i for i in range(6)]
        produce(bootstrap, "jobs", values, partitions=2)
        with share_consumer(bootstrap, "jobs-eos", ["jobs"]) as consumer:
            deliveries = consume(consumer, until=count_at_least(len(values)), timeout=60)
        assert sorted(d.value for d in deliveries) == values
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    assert f"Apache Kafka {os.environ.get(KAFKA_VERSION_ENV, '4.4.0')} stopped" in stderr
    _wait_gone(jvms)


def test_the_jvms_die_with_a_killed_launcher() -> None:
    process, _ = _start()
    jvms = _java_children(process.pid)
    assert len(jvms) == 1
    process.kill()
    process.wait()
    _wait_gone(jvms)


def _path_without(*commands: str) -> str:
    """A PATH with this Python and the usual tools but none of ``commands``."""
    keep = Path(os.environ["HOME"]) / ".kse-test-path"
    shutil.rmtree(keep, ignore_errors=True)
    keep.mkdir()
    for name in ("java", "mvn"):
        found = shutil.which(name)
        if found and name not in commands:
            (keep / name).symlink_to(found)
    return str(keep)


@pytest.mark.parametrize(("missing", "says"), [
    ("mvn", "needs Maven and no 'mvn' is on PATH"),
    ("java", "needs Java 17 or newer and no 'java' is on PATH"),
])
def test_a_missing_tool_is_named_in_one_line(tmp_path: Path, missing: str, says: str) -> None:
    env = {**CLI_ENV, "PATH": _path_without(missing), "XDG_CACHE_HOME": str(tmp_path)}
    env.pop("JAVA_HOME", None)
    outcome = subprocess.run([CLI, "broker", "--kafka"], capture_output=True, text=True,
                             env=env, timeout=60)
    assert outcome.returncode == 1
    assert "Traceback" not in outcome.stderr
    assert says in outcome.stderr.strip().splitlines()[-1]


def test_a_failed_fetch_gives_mavens_reason(tmp_path: Path) -> None:
    env = {**CLI_ENV, KAFKA_VERSION_ENV: "0.0.404", "XDG_CACHE_HOME": str(tmp_path)}
    outcome = subprocess.run([CLI, "broker", "--kafka"], capture_output=True, text=True,
                             env=env, timeout=180)
    assert outcome.returncode == 1
    assert "Traceback" not in outcome.stderr
    line = outcome.stderr.strip().splitlines()[-1]
    assert "fetching Apache Kafka 0.0.404 with Maven failed" in line
    assert "org.apache.kafka:kafka_2.13:jar:0.0.404" in line


def test_a_cluster_id_that_starts_with_a_dash_formats(monkeypatch: pytest.MonkeyPatch) -> None:
    from kafka_share_eos.proving_ground.launchers import kafka_cluster, kafka_jvm

    # URL-safe base64 of a first byte 0xF8 starts with "-": one random id in 64 does.
    dashed = base64.urlsafe_b64encode(b"\xf8" + bytes(15)).decode().rstrip("=")
    assert dashed.startswith("-")
    monkeypatch.setattr(kafka_jvm, "new_cluster_id", lambda: dashed)
    with kafka_cluster.KafkaCluster() as cluster:
        cluster.create_topic("dashed", 1)
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        assert "dashed" in admin.list_topics(timeout=30).topics
