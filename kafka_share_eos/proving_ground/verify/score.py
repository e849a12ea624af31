"""Judging a run from its sinks: per record, how many times its effect landed."""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass, field

from kafka_share_eos.proving_ground.verify.targets import Coordinates, Landed, Produced

FOREIGN_PARTITION = -1
"""The partition of rows another writer appended to a run's tables (the ``delta-maintenance``
fault's): no topic has it, so they are no record's effect, and the count leaves them out."""


@dataclass(frozen=True)
class Score:
    """Duplicates and losses over every sink of a run.

    ``duplicates`` counts extra applications (a record applied three times in one sink counts
    two), records applied although dead-lettered (handling the letter would apply them again)
    and rows of records the run never produced (but another writer's, on
    :data:`FOREIGN_PARTITION`); ``losses`` counts records missing from at least
    one sink and not dead-lettered. ``per_sink`` breaks both down by sink.
    """

    records: int
    duplicates: int
    losses: int
    dead_lettered: int = 0
    per_sink: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Exactly once: nothing duplicated, nothing lost."""
        return self.duplicates == 0 and self.losses == 0

    @classmethod
    def empty(cls) -> Score:
        """The score of a run not counted yet."""
        return cls(0, 0, 0)


def score(landed: Landed, produced: Produced, dead_lettered: Set[Coordinates]) -> Score:
    """Compare what landed in each sink with what was produced."""
    lost: set[Coordinates] = set()
    duplicates = 0
    per_sink: dict[str, tuple[int, int]] = {}
    for sink, counts in landed.items():
        sink_lost = {
            coords for coords in produced
            if counts.get(coords, 0) == 0 and coords not in dead_lettered
        }
        extra = sum(max(0, counts.get(coords, 0) - 1) for coords in produced)
        extra += sum(n for coords, n in counts.items()
                     if coords not in produced and coords[0] != FOREIGN_PARTITION)
        extra += sum(1 for coords in dead_lettered if counts.get(coords, 0) > 0)
        per_sink[sink] = (extra, len(sink_lost))
        lost |= sink_lost
        duplicates += extra
    return Score(len(produced), duplicates, len(lost), len(dead_lettered), per_sink)
