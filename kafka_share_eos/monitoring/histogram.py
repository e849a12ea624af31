"""A distribution of observations kept as Prometheus histogram buckets.

The exporter reads the toolkit's figures at scrape time rather than owning ``prometheus_client``
metric objects, so each histogram is accumulated here and handed to Prometheus as cumulative
bucket counts.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field

SECONDS_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
"""Upper bounds, in seconds, for batch, stage and lock-holding times: a micro-batch costs
~0.3 s of fixed overhead in local mode, and the default record lock is 30 s."""


@dataclass
class Histogram:
    """Counts of observations per bucket, their sum and their number."""

    bounds: tuple[float, ...] = SECONDS_BUCKETS
    counts: list[int] = field(default_factory=list)
    total: float = 0.0

    def __post_init__(self) -> None:
        self.counts = [0] * (len(self.bounds) + 1)

    def observe(self, value: float) -> None:
        """Count one observation."""
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.total += value

    @property
    def observations(self) -> int:
        """How many values were observed."""
        return sum(self.counts)

    def cumulative(self) -> list[tuple[str, float]]:
        """``(le, count)`` pairs as Prometheus expects them, ending with ``+Inf``."""
        pairs, running = [], 0
        for bound, count in zip((*self.bounds, math.inf), self.counts, strict=True):
            running += count
            pairs.append(("+Inf" if bound == math.inf else repr(bound), float(running)))
        return pairs
