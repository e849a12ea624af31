"""The task slots a session has, read from its settings without a ``sparkContext``: from
settings alone, from a session that refuses some, and from a Spark Connect server's."""

from __future__ import annotations

import os
from typing import Any

import pytest

from kafka_share_eos.spark_slots import session_settings, task_slots

pytestmark = pytest.mark.timeout(300)


@pytest.mark.parametrize(("settings", "slots"), [
    ({"spark.master": "local"}, 1),
    ({"spark.master": "local[3]"}, 3),
    ({"spark.master": "local[4, 2]"}, 4),
    ({"spark.master": "local[*]"}, os.cpu_count()),
    ({"spark.master": "local[8]", "spark.task.cpus": "2"}, 4),
    ({"spark.master": "local-cluster[2, 3, 1024]"}, 6),
    ({"spark.master": "spark://h:7077", "spark.cores.max": "12"}, 12),
    ({"spark.master": "yarn", "spark.executor.instances": "5", "spark.executor.cores": "4"}, 20),
    ({"spark.master": "yarn", "spark.executor.instances": "5", "spark.executor.cores": "4",
      "spark.dynamicAllocation.enabled": "true", "spark.dynamicAllocation.maxExecutors": "2"}, 8),
    ({"spark.master": "k8s://https://h", "spark.executor.cores": "4"}, None),
    ({}, None),
])
def test_task_slots_from_the_settings(settings: dict[str, str], slots: int | None) -> None:
    assert task_slots(settings) == slots



class Refusing:
    """A session whose conf refuses some keys, as a managed service may."""

    class conf:  # SparkSession.conf
        @staticmethod
        def get(key: str, default: str | None = None) -> str | None:
            if key == "spark.master":
                return "local[3]"
            if key == "spark.executor.cores":
                raise RuntimeError(f"[CONFIG_NOT_AVAILABLE] {key}")
            return default


def test_settings_the_session_refuses_are_left_out() -> None:
    assert session_settings(Refusing()) == {"spark.master": "local[3]"}  # type: ignore[arg-type]


@pytest.mark.connect
def test_a_spark_connect_session_reads_its_servers_task_slots(connect_spark: Any) -> None:
    assert task_slots(session_settings(connect_spark)) == 2
