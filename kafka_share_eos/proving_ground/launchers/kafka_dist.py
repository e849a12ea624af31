"""Apache Kafka's jars, fetched once with Maven from Maven Central into a cache.

Apache Kafka publishes the broker itself as jars (``org.apache.kafka:kafka_2.13`` and what it
depends on), so a machine with Java and Maven can run a real broker without a distribution
archive. The jars of one version go to ``$XDG_CACHE_HOME/kafka-share-eos/kafka-<version>/libs``
(:mod:`~kafka_share_eos.proving_ground.launchers.cache`).

Version pinned: :data:`KAFKA_VERSION`. Share groups are production-ready from Kafka 4.2; 4.4.0 is
the newest release served and its share groups work with the pinned confluent-kafka
``ShareConsumer`` (librdkafka 2.16). :data:`KAFKA_VERSIONS` is the matrix of supported releases
the tests run on (see docs/real-cluster.md for what was run on each).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from kafka_share_eos.proving_ground.errors import KafkaLauncherError
from kafka_share_eos.proving_ground.launchers.cache import CachedProgram
from kafka_share_eos.proving_ground.launchers.maven import copy_dependencies

KAFKA_VERSION = "4.4.0"
"""The Apache Kafka release the launcher runs unless told otherwise."""

KAFKA_VERSION_ENV = "KSE_KAFKA_VERSION"
"""Environment variable that picks another Apache Kafka release (4.2.0 or later)."""

KAFKA_VERSIONS = ("4.2.2", "4.3.1", "4.4.0")
"""The newest patch of every supported minor release, oldest first: CI runs one exactly-once
cell on each, and the Kafka tier runs on each with ``--kafka-versions=all``."""

KAFKA_VERSIONS_ENV = "KSE_KAFKA_VERSIONS"
"""Environment variable naming the releases of the test matrix (comma-separated, or ``all``)."""

_LOG4J_VERSION = "2.25.5"
_KAFKA = CachedProgram("kafka", KAFKA_VERSION, KAFKA_VERSION_ENV)

kafka_version = _KAFKA.version
"""The Apache Kafka release to run: ``KSE_KAFKA_VERSION`` or :data:`KAFKA_VERSION`."""


def kafka_versions(names: str | None = None) -> tuple[str, ...]:
    """The releases of the test matrix, oldest first: ``names`` (comma-separated, ``all`` for
    :data:`KAFKA_VERSIONS`), else ``KSE_KAFKA_VERSIONS``, else :func:`kafka_version` alone;
    :func:`kafka_version` is always among them.

    Raises:
        KafkaLauncherError: a name that is not a release number.
    """
    names = names or os.environ.get(KAFKA_VERSIONS_ENV) or ""
    wanted = {kafka_version()}
    for name in filter(None, (part.strip() for part in names.split(","))):
        if name == "all":
            wanted.update(KAFKA_VERSIONS)
        elif re.fullmatch(r"\d+\.\d+\.\d+", name):
            wanted.add(name)
        else:
            raise KafkaLauncherError(
                f"{name!r} is not an Apache Kafka release (write them like 4.2.2, or 'all')"
            )
    return tuple(sorted(wanted, key=release_key))


def release_key(version: str) -> tuple[int, ...]:
    """``version`` as numbers, for ordering releases (``"4.10.0"`` after ``"4.9.1"``)."""
    return tuple(int(part) for part in re.findall(r"\d+", version))


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
    return _KAFKA.fetched(version, _fetch) / "libs"


def _fetch(version: str, target: Path) -> None:
    libs = target / "libs"
    copy_dependencies(
        [f"org.apache.kafka:kafka_2.13:{version}", f"org.apache.kafka:kafka-tools:{version}",
         f"org.apache.logging.log4j:log4j-slf4j-impl:{_LOG4J_VERSION}"],
        libs, what=f"Apache Kafka {version}", error=KafkaLauncherError,
    )
    if not (libs / f"kafka_2.13-{version}.jar").exists():
        raise KafkaLauncherError(f"fetching Apache Kafka {version}: Maven copied no broker jar")


KAFKA_TOOLS = {
    "share-groups": "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
    "configs": "org.apache.kafka.tools.ConfigCommand",
    "features": "org.apache.kafka.tools.FeatureCommand",
    "topics": "org.apache.kafka.tools.TopicCommand",
    "console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "console-share-consumer": "org.apache.kafka.tools.consumer.ConsoleShareConsumer",
    "consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "groups": "org.apache.kafka.tools.GroupsCommand",
}
"""Kafka's command-line tools by the name of their script less ``kafka-`` and ``.sh``
(``kafka-share-groups.sh`` is ``share-groups``), each the class its script runs."""


def tool_command(name: str, *arguments: str, version: str | None = None) -> list[str]:
    """The command line that runs Kafka's tool ``name`` (a key of :data:`KAFKA_TOOLS`) of
    ``version`` with ``arguments``, as its ``bin/kafka-<name>.sh`` script would, from the jars
    the launcher fetched (fetching them if missing).

    Raises:
        KafkaLauncherError: an unknown tool (the message lists the known ones), no Java 17, or
            the jars could not be fetched.
    """
    if name not in KAFKA_TOOLS:
        raise KafkaLauncherError(
            f"Kafka has no tool {name!r} here; the tools are: {', '.join(KAFKA_TOOLS)}"
        )
    return [str(java_binary()), "-cp", f"{kafka_jars(version)}/*", KAFKA_TOOLS[name],
            *arguments]


def feature_command(version: str, bootstrap_servers: str, *arguments: str) -> str:
    """Run Kafka's ``kafka-features.sh`` of ``version`` against the cluster at
    ``bootstrap_servers``; return what it printed.

    Raises:
        KafkaLauncherError: the command failed (the message has its last lines).
    """
    done = subprocess.run(
        tool_command("features", "--bootstrap-server", bootstrap_servers, *arguments,
                     version=version),
        capture_output=True, text=True, check=False,
    )
    if done.returncode != 0:
        said = (done.stderr.strip() or done.stdout.strip()).splitlines()[-3:]
        raise KafkaLauncherError(
            f"kafka-features.sh {' '.join(arguments)} failed: {' / '.join(said) or 'no output'}"
        )
    return done.stdout


def finalized_features(version: str, bootstrap_servers: str) -> dict[str, str]:
    """Each feature's finalised level as ``kafka-features.sh describe`` prints it
    (``metadata.version`` as ``4.3-IV0``, the others as numbers)."""
    described = feature_command(version, bootstrap_servers, "describe")
    return dict(re.findall(r"Feature: (\S+).*?FinalizedVersionLevel: (\S+)", described))


def release_features(version: str, bootstrap_servers: str) -> dict[str, int]:
    """The feature levels Kafka ``version``'s release gives a new cluster
    (``kafka-features.sh version-mapping``)."""
    release = ".".join(version.split(".")[:2])
    mapping = feature_command(version, bootstrap_servers, "version-mapping",
                              "--release-version", release)
    return {name: int(level) for name, level in re.findall(r"^(\S+)=(\d+)", mapping, re.M)}


def main() -> None:
    """``python -m kafka_share_eos.proving_ground.launchers.kafka_dist``: fetch the jars of every
    release the tests run now, the matrix's included (the test command does, so that a failed
    fetch fails it at once with Maven's reason); silent when they are there."""
    import sys

    try:
        java_binary()
        for version in sorted({*kafka_versions(), *KAFKA_VERSIONS}, key=release_key):
            kafka_jars(version)
    except KafkaLauncherError as error:
        print(f"kafka-share-eos: {error}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
