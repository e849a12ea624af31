"""Resident memory of a streaming query's processes, sampled after each micro-batch.

The *runner* is the Python process Spark starts for the ``kafka-share`` source (it plans
batches and holds the share consumer); the *driver* is the Spark driver JVM plus the Python
process running ``foreachBatch``. Both live as long as the query: memory they keep per batch
would grow until the query dies, so their resident set must stay flat over many batches.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import psutil

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from kafka_share_eos.proving_ground.bench.pipelines import ForeachBatch

MIB = 2**20


def resident_bytes(pid: int) -> int:
    """The resident set size of process ``pid``, 0 once it has exited."""
    try:
        return psutil.Process(pid).memory_info().rss
    except psutil.NoSuchProcess:
        return 0


@dataclass
class MemorySamples:
    """Resident bytes of the runner and of the driver (JVM + Python) after each batch."""

    runner: list[int] = field(default_factory=list)
    driver: list[int] = field(default_factory=list)

    def growth(self, warm_up: int) -> dict[str, float]:
        """Last sample against the sample after ``warm_up`` batches, per process, in MiB and
        as a ratio."""
        summary: dict[str, float] = {"batches": float(len(self.runner)), "warm_up": warm_up}
        for name, samples in (("runner", self.runner), ("driver", self.driver)):
            first, last = samples[min(warm_up, len(samples) - 1)], samples[-1]
            summary[f"{name}_first_mib"] = first / MIB
            summary[f"{name}_last_mib"] = last / MIB
            summary[f"{name}_peak_mib"] = max(samples) / MIB
            summary[f"{name}_growth"] = last / first
        return summary


def sampling(
    write: ForeachBatch, jvm: int, runners: Callable[[], list[int]], samples: MemorySamples
) -> ForeachBatch:
    """``write``, then a sample of the runner's (found by ``runners()``) and the driver's
    resident memory after each batch."""
    runner: list[int] = []

    def batch(batch_df: DataFrame, batch_id: int) -> None:
        write(batch_df, batch_id)
        if not runner or not resident_bytes(runner[0]):
            runner[:] = runners()[:1]
        samples.runner.append(resident_bytes(runner[0]) if runner else 0)
        samples.driver.append(resident_bytes(jvm) + resident_bytes(os.getpid()))

    return batch
