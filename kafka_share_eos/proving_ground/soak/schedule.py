"""How a soak runs and when its faults strike: the kinds in rounds, every kind once per round
in a seeded random order, a drawn gap between two faults."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

from kafka_share_eos.proving_ground.soak.strikes import STRIKES


@dataclass(frozen=True)
class SoakOptions:
    """How a soak runs (the options of ``kafka-share-eos soak``)."""

    minutes: float = 60.0
    rate: float = 20.0
    """Records a second the producer sends after the backlog."""
    backlog: int = 3000
    """Records produced before the pipeline starts: the warm-up ends once it was applied and
    the ledger filled the window its retention keeps."""
    per_trigger: int = 500
    consumers: int = 4
    partitions: int = 1
    fault_every: float = 180.0
    """Seconds between faults on average (each gap drawn from half to one and a half of it)."""
    fault_seconds: float = 30.0
    """How long a lasting fault (a node down, the store blackholed or throttled) stays."""
    warm_up_batches: int = 20
    poison_every: int = 2000
    seed: int = 0
    faults: tuple[str, ...] = tuple(STRIKES)
    sample_seconds: float = 5.0
    stall_seconds: float = 600.0
    """The soak fails when no record was applied for this long while records were waiting."""


def fault_order(kinds: tuple[str, ...], rng: random.Random) -> Iterator[str]:
    """The kinds in rounds, each round shuffled: every kind strikes once per round."""
    while True:
        round_ = list(kinds)
        rng.shuffle(round_)
        yield from round_


class FaultSchedule:
    """The soak's next fault kinds (:func:`fault_order`) and the gaps between them."""

    def __init__(self, kinds: tuple[str, ...], rng: random.Random) -> None:
        self.kinds = kinds
        self.rng = rng
        self.struck: set[str] = set()
        self._order = fault_order(kinds, rng)

    def next(self) -> str:
        """The kind to strike now."""
        kind = next(self._order)
        self.struck.add(kind)
        return kind

    def gap(self, left: float, mean: float) -> float:
        """Seconds to the next fault, ``left`` seconds before the time is up: drawn from half
        to one and a half of ``mean``, but short enough for the kinds not struck yet to strike
        before the end (a slow warm-up leaves less time than planned)."""
        gap = self.rng.uniform(0.5, 1.5) * mean
        unstruck = len(set(self.kinds) - self.struck)
        return min(gap, left / (unstruck + 1)) if unstruck else gap
