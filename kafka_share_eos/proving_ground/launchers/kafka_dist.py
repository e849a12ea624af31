"""Apache Kafka's jars, fetched once with Maven from Maven Central into a cache.

Apache Kafka publishes the broker itself as jars (``org.apache.kafka:kafka_2.13`` and what it
depends on), so a machine with Java and Maven can run a real broker without a distribution
archive. The jars of one version go to ``$XDG_CACHE_HOME/kafka-share-eos/kafka-<version>``
(``~/.cache`` by default, outside any repository); a marker file says the fetch completed, and
later calls reuse it. Concurrent callers (pytest workers) wait for one fetch.

Version pinned: :data:`KAFKA_VERSION`. Share groups are production-ready from Kafka 4.2; 4.4.0 is
the newest release served and its share groups work with the pinned confluent-kafka
``ShareConsumer`` (librdkafka 2.16): see docs/real-cluster.md for what was run.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from kafka_share_eos.proving_ground.errors import KafkaLauncherError

KAFKA_VERSION = "4.4.0"
"""The Apache Kafka release the launcher runs unless told otherwise."""

KAFKA_VERSION_ENV = "KSE_KAFKA_VERSION"
"""Environment variable that picks another Apache Kafka release (4.2.0 or later)."""

FETCH_TIMEOUT_S = 900.0
_LOG4J_VERSION = "2.25.5"
_COMPLETE = ".complete"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")

_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kafka-share-eos</groupId>
  <artifactId>apache-kafka-jars</artifactId>
  <version>{version}</version>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId>
      <version>{version}</version>
    </dependency>
    <dependency>
      <groupId>org.apache.kafka</groupId><artifactId>kafka-tools</artifactId>
      <version>{version}</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId>
      <version>{log4j}</version>
    </dependency>
  </dependencies>
</project>
"""


def kafka_version() -> str:
    """The Apache Kafka release to run: ``KSE_KAFKA_VERSION`` or :data:`KAFKA_VERSION`."""
    return os.environ.get(KAFKA_VERSION_ENV) or KAFKA_VERSION


def cache_dir(version: str) -> Path:
    """Where the jars of ``version`` are (or will be) kept."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "kafka-share-eos" / f"kafka-{version}"


def java_binary() -> Path:
    """The ``java`` that runs the brokers (``JAVA_HOME`` first, then ``PATH``).

    Raises:
        KafkaLauncherError: no ``java``, or one older than 17.
    """
    home = os.environ.get("JAVA_HOME")
    candidate = Path(home, "bin", "java") if home else None
    if candidate is None or not candidate.exists():
        found = shutil.which("java")
        candidate = Path(found) if found else None
    if candidate is None:
        raise KafkaLauncherError(
            "Apache Kafka needs Java 17 or newer and no 'java' is on PATH or in JAVA_HOME: "
            "install one (e.g. apt install openjdk-17-jre-headless)"
        )
    banner = subprocess.run(
        [str(candidate), "-version"], capture_output=True, text=True, check=False
    ).stderr
    match = re.search(r'version "(\d+)', banner)
    if match is None or int(match[1]) < 17:
        raise KafkaLauncherError(
            f"Apache Kafka needs Java 17 or newer; {candidate} reports: "
            f"{banner.strip().splitlines()[0] if banner.strip() else 'no version'}"
        )
    return candidate


def kafka_jars(version: str | None = None) -> Path:
    """The directory holding every jar a broker of ``version`` needs, fetched if missing.

    Raises:
        KafkaLauncherError: Maven is missing, or the fetch failed (the message names why).
    """
    version = version or kafka_version()
    target = cache_dir(version)
    if (target / _COMPLETE).exists():
        return target / "libs"
    target.mkdir(parents=True, exist_ok=True)
    with open(target / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (target / _COMPLETE).exists():
            _fetch(version, target)
    return target / "libs"


def _fetch(version: str, target: Path) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise KafkaLauncherError(
            f"fetching Apache Kafka {version} needs Maven and no 'mvn' is on PATH: "
            "install it (e.g. apt install maven)"
        )
    libs = target / "libs"
    shutil.rmtree(libs, ignore_errors=True)
    with tempfile.TemporaryDirectory(prefix="kse-kafka-pom-") as work:
        pom = Path(work, "pom.xml")
        pom.write_text(_POM.format(version=version, log4j=_LOG4J_VERSION))
        command = [
            # --update-snapshots also retries releases whose earlier fetch failed, which Maven
            # otherwise remembers and refuses to fetch again for a day.
            mvn, "--batch-mode", "--quiet", "--update-snapshots", "--file", str(pom),
            "dependency:copy-dependencies", "-DincludeScope=runtime",
            f"-DoutputDirectory={libs}",
        ]
        try:
            outcome = subprocess.run(
                command, capture_output=True, text=True, timeout=FETCH_TIMEOUT_S, check=False
            )
        except subprocess.TimeoutExpired:
            raise KafkaLauncherError(
                f"fetching Apache Kafka {version} with Maven took over {FETCH_TIMEOUT_S:.0f} s"
            ) from None
    if outcome.returncode != 0 or not (libs / f"kafka_2.13-{version}.jar").exists():
        raise KafkaLauncherError(
            f"fetching Apache Kafka {version} with Maven failed: {_maven_reason(outcome)}"
        )
    (target / _COMPLETE).write_text(version + "\n")


def _maven_reason(outcome: subprocess.CompletedProcess[str]) -> str:
    """The line of Maven's output that says what went wrong."""
    text = _ANSI.sub("", outcome.stdout + outcome.stderr)
    lines = [line.strip() for line in text.splitlines()]
    errors = [line.removeprefix("[ERROR]").strip() for line in lines if line.startswith("[ERROR]")]
    advice = ("->", "Re-run", "To see", "For more information", "[Help")
    meaningful = [line.split(" -> [Help")[0] for line in errors
                  if line and not line.startswith(advice)]
    if meaningful:
        return meaningful[0]
    return next((line for line in reversed(lines) if line), f"exit code {outcome.returncode}")


def main() -> None:
    """``python -m kafka_share_eos.proving_ground.launchers.kafka_dist``: fetch the jars now (the
    test command does, so that a failed fetch fails it at once with Maven's reason); silent when
    they are there."""
    import sys

    try:
        java_binary()
        kafka_jars()
    except KafkaLauncherError as error:
        print(f"kafka-share-eos: {error}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
