"""Local Spark sessions: the class archive their JVMs start from, jars on their class path, and
waiting out a stopped query's source runner."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyspark
import pytest

from kafka_share_eos.proving_ground.launchers import jvm
from kafka_share_eos.proving_ground.launchers.hadoop_aws import s3a_jars
from kafka_share_eos.proving_ground.launchers.spark import SOURCE_RUNNER_MODULE, source_runners


@pytest.fixture
def fake_pyspark(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A PySpark installation of two jars, with the cache under ``tmp_path``."""
    jars = tmp_path / "site" / "pyspark" / "jars"
    jars.mkdir(parents=True)
    for name in ("spark-core.jar", "spark-sql.jar"):
        (jars / name).write_bytes(b"jar")
    monkeypatch.setattr(pyspark, "__file__", str(jars.parent / "__init__.py"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return jars


def test_a_reinstall_into_the_same_path_gets_its_own_archive(fake_pyspark: Path) -> None:
    first = jvm.archive_path()
    assert first is not None and first == jvm.archive_path()
    assert first.parent == fake_pyspark.parents[2] / "cache" / "kafka-share-eos"
    jar = fake_pyspark / "spark-sql.jar"
    later = time.time() + 5
    os.utime(jar, (later, later))
    assert jvm.archive_path() != first


def test_only_archives_unused_for_the_period_are_pruned(tmp_path: Path) -> None:
    old, recent = tmp_path / "spark-4.0-old.jsa", tmp_path / "spark-4.0-recent.jsa"
    for archive in (old, recent):
        archive.write_bytes(b"archive")
        archive.with_suffix(".lock").touch()
    month_ago = time.time() - 30 * 86400
    os.utime(old, (month_ago, month_ago))
    assert jvm.prune_archives(tmp_path, unused_days=14) == [old]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "spark-4.0-recent.jsa", "spark-4.0-recent.lock"
    ]


def test_the_jvms_warnings_go_to_stderr_not_stdout() -> None:
    java = jvm._java()
    assert java is not None, "Spark needs a java on PATH"
    # Large pages without any configured: a warning on most machines, harmless everywhere.
    command = [str(java), "-XX:+UseLargePages", "-version"]
    plain = subprocess.run(command, capture_output=True, text=True, timeout=60, check=True)
    warnings = [line for line in plain.stdout.splitlines() if "[warning]" in line]
    routed = subprocess.run(
        [command[0], *jvm.JVM_LOG_OPTIONS, *command[1:]],
        capture_output=True, text=True, timeout=60, check=True,
    )
    assert routed.stdout == ""
    assert all(line.split("]", 1)[1] in routed.stderr for line in warnings)


_DRIVER_WITH_A_JAR = """
import sys
from kafka_share_eos.proving_ground.launchers.spark import jars_on_classpath, local_spark_session
jar, local_dir = sys.argv[1:]
spark = local_spark_session(config={**jars_on_classpath([jar]), "spark.local.dir": local_dir})
spark.range(1).count()
loader = spark.sparkContext._jvm.java.lang.Thread.currentThread().getContextClassLoader()
print(loader.getResource("org/apache/hadoop/fs/s3a/S3AFileSystem.class") is not None, flush=True)
sys.stdin.read()
"""


def test_a_driver_killed_with_its_jvm_leaves_no_copy_of_the_jars_on_its_class_path(
    tmp_path: Path,
) -> None:
    jar = next(jar for jar in s3a_jars() if jar.name.startswith("hadoop-aws-"))
    driver = subprocess.Popen([sys.executable, "-c", _DRIVER_WITH_A_JAR, str(jar), str(tmp_path)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              start_new_session=True)
    try:
        assert driver.stdout is not None
        assert driver.stdout.readline().strip() == "True"
        assert list(tmp_path.glob("spark-*")), "the driver's temporary directory is elsewhere"
    finally:
        os.killpg(driver.pid, signal.SIGKILL)
        driver.wait(timeout=60)
    assert not list(tmp_path.rglob("*.jar"))


def test_source_runners_are_found_among_the_children_until_they_exit() -> None:
    runner = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", SOURCE_RUNNER_MODULE]
    )
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert source_runners(os.getpid()) == [runner.pid]
        runner.kill()
        runner.wait()
        assert source_runners(os.getpid()) == []
    finally:
        for child in (runner, other):
            child.kill()
            child.wait()
