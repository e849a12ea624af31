"""How many tasks a session runs at once, read from its settings, for ``consumers=N``.

Each of a batch's N slots is a task that polls for up to ``pollTimeoutMs``: a session with fewer
task slots runs them in turns, the later ones only once earlier ones ended, so a batch takes
several poll timeouts, and a consumer waiting for its turn keeps its partitions, with whatever
its client fetched for it still locked.

The count comes from the session's configuration (``spark.conf``), which a Spark Connect client
reads from its server as a classic session does; no ``sparkContext`` is needed:

- ``spark.master`` ``local[N]`` (``local`` is 1, ``local[*]`` the cores of the machine the
  driver runs on, counted where the source plans) and ``local-cluster[W,C,M]`` (W times C) say it
  exactly;
- on a cluster, ``spark.cores.max`` (a standalone application's cap), else
  ``spark.executor.instances`` (or, with dynamic allocation, its ``maxExecutors``) times
  ``spark.executor.cores``: the most the application is given;
- each divided by ``spark.task.cpus``.

``spark.default.parallelism`` and ``spark.sql.shuffle.partitions`` are how many partitions a
stage is cut into, not how many run at once, so they are not read. Where none of the above is
set (a cluster manager's defaults), the count is unknown and nothing is said.

The settings are read in the session (:func:`session_settings`, at ``register``) and carried
to the source's planning in Spark's source runner (:func:`warn_if_consumers_wait`), where the
stream's ``consumers`` is known.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("kafka_share_eos.source")

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
            # Only a count for a warning: never a reason for register() to fail.
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


def warn_if_consumers_wait(consumers: int, settings: Mapping[str, str] | None) -> int | None:
    """Log one warning when the session has fewer task slots than ``consumers``; return the
    slots found (None: unknown, or settings not carried from the session)."""
    slots = None if settings is None else task_slots(settings)
    if slots is not None and consumers > slots:
        log.warning(
            "kafka-share source: 'consumers' is %d but the session runs %d tasks at once "
            "(spark.master %s): the slots' tasks take turns, so each batch waits for them, and "
            "a consumer waiting for its turn keeps its partitions, any records its client "
            "fetched staying locked, their lock budget running, until its task polls them; "
            "set 'consumers' to %d or give the session more task slots",
            consumers, slots, settings.get("spark.master", "unset") if settings else "unset",
            slots,
        )
    return slots
