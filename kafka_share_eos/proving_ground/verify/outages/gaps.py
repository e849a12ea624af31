"""How long a fault stalled the stream, from the pipelines' progress lines.

Each finished batch appends a progress line with the moment it finished (``time``) and the
records it applied (``written``). The stall of a fault is the longest gap between two batches
that applied records, from the last one before the fault to the end of the run: the held batch
that the fault struck usually finishes at once, and the wait comes with the batch after it,
which needs the partition's new leader.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import Any


def applied_times(lines: Iterable[Mapping[str, Any]]) -> list[float]:
    """When each batch that applied records finished, in order."""
    return sorted(float(line["time"]) for line in lines
                  if line.get("written", 0) > 0 and "time" in line)


def stall_seconds(times: Iterable[float], fault_at: float) -> float | None:
    """The longest gap between batches that applied records, from the last before
    ``fault_at`` (or ``fault_at`` itself, without one) on; None if none applied after it."""
    ordered = sorted(times)
    after = [t for t in ordered if t >= fault_at]
    if not after:
        return None
    before = [t for t in ordered if t < fault_at]
    moments = [before[-1] if before else fault_at, *after]
    return max(later - earlier for earlier, later in itertools.pairwise(moments))


def _last_started(lines: Iterable[Mapping[str, Any]]) -> Mapping[str, Any]:
    started = [line for line in lines if line.get("started")]
    return started[-1] if started else {}


def held_partitions(lines: Iterable[Mapping[str, Any]]) -> list[int]:
    """Partitions of the records of the last batch started (the one a hold stopped)."""
    return sorted({int(partition) for partition, _ in _last_started(lines).get("records", [])})


def held_batch(lines: Iterable[Mapping[str, Any]]) -> int:
    """The id of the last batch started, -1 before any."""
    return int(_last_started(lines).get("batch", -1))
