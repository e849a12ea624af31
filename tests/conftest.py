"""Every module of the toolkit is imported once, on the main thread, before any test runs.

kafka-share-eos registers a pytest plugin, so pytest rewrites the assertions of every module of
the distribution as it is first imported, parsing its source with ``ast``. On Python 3.11 two
threads parsing at once can fail with "SystemError: AST constructor recursion depth mismatch",
and the toolkit imports some modules on first use from threads of its own (the two-phase
coordinator prepares its participants at the same time). Outside pytest no import hook parses
them, so the toolkit itself needs nothing of the kind.

It also selects the tests of the run: the delta-spark tier's, the iceberg-spark tier's, or the
main run's, and tells the Kafka version matrix which modules need a newer release.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import pkgutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

# The shared test code's own checks fail with pytest's detailed messages too.
pytest.register_assert_rewrite("helpers")

import kafka_share_eos  # noqa: E402
import kafka_share_eos.strategies  # noqa: E402
from kafka_share_eos.errors import MissingExtraError  # noqa: E402

# pyspark 4.1, the iceberg-spark tier's, lacks the streaming reader API the kafka-share source is
# built on (pyspark.sql.streaming.datasource, from 4.2): that tier imports every other module.
_UNLOADABLE = (MissingExtraError,) if os.environ.get("KSE_TIER") == "iceberg-spark" else ()

for _package in (kafka_share_eos, kafka_share_eos.strategies):
    for _module in pkgutil.walk_packages(_package.__path__, f"{_package.__name__}."):
        with contextlib.suppress(*_UNLOADABLE):
            importlib.import_module(_module.name)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


# The delta-spark tier (`./dev test` runs it in .venv-delta-spark, docs/development.md) runs the
# tests marked `delta_spark` and `older_pyspark`; the main run leaves the `delta_spark` ones out.
DELTA_SPARK_TIER = os.environ.get("KSE_TIER") == "delta-spark"
# The iceberg-spark tier (.venv-iceberg-spark, pyspark 4.1) runs only the tests marked
# `iceberg_spark`, which need Iceberg's Spark runtime; the main run leaves them out.
ICEBERG_SPARK_TIER = os.environ.get("KSE_TIER") == "iceberg-spark"
TIER_MARKERS = ("delta_spark", "iceberg_spark")


# Kafka-tier modules that need a newer release than the version matrix's oldest: a group's own
# delivery limit is a group config since 4.3, the brokers' dead-letter queue came with 4.4
# (share.version=2). The matrix (--kafka-versions) leaves their copies on older releases out.
KAFKA_SINCE = {
    "kafka/test_delivery_limit.py": "4.3",
    "deadletter/test_broker.py": "4.4",
    "crashes/test_broker_dead_letters.py": "4.4",
}
TESTS = Path(__file__).resolve().parent


def pytest_itemcollected(item: pytest.Item) -> None:
    since = KAFKA_SINCE.get(item.path.relative_to(TESTS).as_posix())
    if since is not None and item.get_closest_marker("kafka_since") is None:
        item.add_marker(pytest.mark.kafka_since(since))


def pytest_ignore_collect(collection_path: Path) -> bool | None:
    # The iceberg-spark tier collects only the files of its tests: others may import the source,
    # which pyspark 4.1 cannot load, and importing the whole suite for five tests costs minutes.
    name = collection_path.name
    if ICEBERG_SPARK_TIER and name.startswith("test_") and name.endswith(".py"):
        return "iceberg_spark" not in collection_path.read_text()
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Run before `-m` selects: an `older_pyspark(full=True)` test counts as `full` in the tier,
    # so CI runs the tier's cheap selection and the main run all of them.
    if DELTA_SPARK_TIER:
        for item in items:
            marker = item.get_closest_marker("older_pyspark")
            if marker is not None and marker.kwargs.get("full"):
                item.add_marker(pytest.mark.full)

    def in_tier(item: pytest.Item) -> bool:
        if DELTA_SPARK_TIER:
            return any(item.get_closest_marker(m) for m in ("delta_spark", "older_pyspark"))
        if ICEBERG_SPARK_TIER:
            return item.get_closest_marker("iceberg_spark") is not None
        return not any(item.get_closest_marker(m) for m in TIER_MARKERS)

    left_out = [item for item in items if not in_tier(item)]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = [item for item in items if in_tier(item)]


if DELTA_SPARK_TIER:

    @pytest.fixture(scope="session")
    def spark() -> Iterator[SparkSession]:
        """The tier's local Spark session, set up for delta-spark."""
        from kafka_share_eos.proving_ground.launchers.spark import local_spark_session

        session = local_spark_session(delta_spark=True)
        yield session
        session.stop()


if ICEBERG_SPARK_TIER:

    @pytest.fixture(scope="session")
    def spark() -> Iterator[SparkSession]:
        """The tier's local Spark session, with Iceberg's Spark runtime."""
        from kafka_share_eos.proving_ground.launchers.iceberg_spark import iceberg_spark_config
        from kafka_share_eos.proving_ground.launchers.spark import local_spark_session

        session = local_spark_session(config=iceberg_spark_config())
        yield session
        session.stop()
