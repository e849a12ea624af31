"""How many tasks a Spark session runs at once, read from its settings.

The count comes from the session's configuration (``spark.conf``), which a Spark Connect client
reads from its server as a classic session does; no ``sparkContext`` is needed:

- ``spark.master`` ``local[N]`` (``local`` is 1, ``local[*]`` the cores of the machine the
  count is made on) and ``local-cluster[W,C,M]`` (W times C) say it exactly;
- on a cluster, ``spark.cores.max`` (a standalone application's cap), else
  ``spark.executor.instances`` (or, with dynamic allocation, its ``maxExecutors``) times
  ``spark.executor.cores``: the most the application is given;
- each divided by ``spark.task.cpus``.

``spark.default.parallelism`` and ``spark.sql.shuffle.partitions`` are how many partitions a
stage is cut into, not how many run at once, so they are not read. Where none of the above is
set (a cluster manager's defaults), the count is unknown.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SETTINGS = (
    "spark.master",
    "spark.cores.max",
    "spark.executor.instances",
    "spark.executor.cores",
    "spark.dynamicAllocation.enabled",
    "spark.dynamicAllocation.maxExecutors",
    "spark.task.cpus",
)
"""The session settings the count is made of."""

_LOCAL = re.compile(r"local(?:\[(\*|\d+)(?:,\s*\d+)?\])?")
_LOCAL_CLUSTER = re.compile(r"local-cluster\[\s*(\d+)\s*,\s*(\d+)\s*,\s*\d+\s*\]")


def session_settings(spark: SparkSession) -> dict[str, str]:
    """The settings of ``spark`` among :data:`SETTINGS` that are set (classic or Connect); one
    the session will not show (a managed service may refuse some) is left out."""
    found = {}
    for key in SETTINGS:
        try:
            value = spark.conf.get(key, None)
        except Exception:
            # A count unknown is Spark's choice, never a reason for a caller to fail.
            continue
        if value is not None:
            found[key] = str(value)
    return found


def _int(settings: Mapping[str, str], key: str) -> int | None:
    try:
        value = int(settings[key].strip())
    except (KeyError, ValueError):
        return None
    return value if value > 0 else None


def _cores(settings: Mapping[str, str]) -> int | None:
    master = settings.get("spark.master", "").strip()
    local = _LOCAL.fullmatch(master)
    if local is not None:
        threads = local[1] or "1"
        return os.cpu_count() if threads == "*" else int(threads)
    cluster = _LOCAL_CLUSTER.fullmatch(master)
    if cluster is not None:
        return int(cluster[1]) * int(cluster[2])
    if (cap := _int(settings, "spark.cores.max")) is not None:
        return cap
    dynamic = settings.get("spark.dynamicAllocation.enabled", "").strip().lower() == "true"
    executors = _int(settings, "spark.dynamicAllocation.maxExecutors" if dynamic
                     else "spark.executor.instances")
    per_executor = _int(settings, "spark.executor.cores")
    if executors is None or per_executor is None:
        return None
    return executors * per_executor


def task_slots(settings: Mapping[str, str]) -> int | None:
    """Tasks the session runs at once by ``settings``; None when they do not say."""
    cores = _cores(settings)
    if cores is None:
        return None
    return max(1, cores // (_int(settings, "spark.task.cpus") or 1))
