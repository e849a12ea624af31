"""The soak's schedule: every fault kind strikes once per round, in a seeded random order, and
the gaps leave room for the kinds not struck yet."""

from __future__ import annotations

import itertools
import random

from kafka_share_eos.proving_ground.soak.schedule import FaultSchedule, SoakOptions, fault_order
from kafka_share_eos.proving_ground.soak.strikes import STRIKES

KINDS = tuple(STRIKES)


def test_each_round_strikes_every_kind_once_in_its_own_order() -> None:
    order = list(itertools.islice(fault_order(KINDS, random.Random(5)), 4 * len(KINDS)))
    rounds = [order[i:i + len(KINDS)] for i in range(0, len(order), len(KINDS))]

    assert all(sorted(round_) == sorted(KINDS) for round_ in rounds)
    assert len({tuple(round_) for round_ in rounds}) > 1
    assert order == list(itertools.islice(fault_order(KINDS, random.Random(5)), len(order)))


def test_gaps_are_drawn_around_the_mean_and_shrink_to_fit_the_kinds_left() -> None:
    schedule = FaultSchedule(KINDS, random.Random(3))

    assert all(90 <= schedule.gap(3600, 180) <= 270 for _ in range(50))
    # 70 s left and six kinds to strike: a gap of at most 10 s each.
    assert schedule.gap(70, 180) <= 10
    for _ in KINDS:
        schedule.next()
    assert schedule.struck == set(KINDS)
    # Every kind struck: the drawn gap, however little time is left.
    assert schedule.gap(70, 180) >= 90


def test_the_defaults_are_an_hour_with_every_kind_and_four_consumers() -> None:
    options = SoakOptions()

    assert (options.minutes, options.consumers, options.warm_up_batches) == (60.0, 4, 20)
    assert options.faults == KINDS
