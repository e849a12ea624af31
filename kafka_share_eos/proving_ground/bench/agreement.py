"""How far a quick run's rows land from a full run's: ``kafka-share-eos bench --against``.

``--quick`` is there to tell, in a few minutes, what a full run would say. It does only if each
row it shares with the full run (same benchmark, same comparison) lands near the full run's
value; this module pairs the rows and measures the distance.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kafka_share_eos.proving_ground.bench.ratios import Ratio

TOLERANCE = 0.2
"""How far a quick row may land from the full run's, as a fraction of the full run's value."""


@dataclass(frozen=True)
class Agreement:
    """One row measured by both runs."""

    benchmark: str
    name: str
    measured: float
    reference: float
    unit: str

    @property
    def deviation(self) -> float:
        """``measured`` relative to ``reference``: +0.1 is 10 % above it."""
        if self.reference == 0:
            return 0.0 if self.measured == 0 else float("inf")
        return (self.measured - self.reference) / abs(self.reference)

    @property
    def agrees(self) -> bool:
        """Whether ``measured`` lands within :data:`TOLERANCE` of ``reference``."""
        # Rounded: a row exactly 20 % off agrees, whatever the float arithmetic says.
        return round(abs(self.deviation), 9) <= TOLERANCE


def agreements(measured: Sequence[Ratio], reference: Sequence[Ratio]) -> list[Agreement]:
    """The rows of ``measured`` that ``reference`` has too, in ``measured``'s order."""
    by_row = {(ratio.benchmark, ratio.name): ratio for ratio in reference}
    return [
        Agreement(ratio.benchmark, ratio.name, ratio.value, by_row[key].value, ratio.unit)
        for ratio in measured
        if (key := (ratio.benchmark, ratio.name)) in by_row
    ]


def saved_ratios(path: Path) -> list[Ratio]:
    """The rows of a run saved with ``--save`` (its ``.json``).

    Raises:
        OSError: the file cannot be read.
        ValueError, KeyError, TypeError: the file is not a saved run.
    """
    rows = json.loads(path.read_text(encoding="utf-8"))["ratios"]
    return [Ratio.from_json(row) for row in rows]


def summary(rows: Sequence[Agreement]) -> str:
    """One line: how many shared rows agree, and the ones that do not with their deviation."""
    apart = [row for row in rows if not row.agrees]
    line = (f"{len(rows) - len(apart)} of {len(rows)} shared rows within "
            f"{TOLERANCE:.0%} of the reference run")
    if apart:
        line += ": apart " + "; ".join(
            f"{row.benchmark} / {row.name} {row.deviation:+.0%}" for row in apart
        )
    return line
