"""Every strategy, every target and every dead-letter sink run on by a pickled copy in a new
process, as a Spark Connect server runs the strategy its client pickled.

The strategy applies batch 0 here; a copy pickled with PySpark's cloudpickle (its connections,
clients and table handles left behind) is loaded in a new Python process, which replays batch 0
(a restarted query runs its last batch again) and applies batch 1, whose first records batch 0
held too. Each target then holds every record exactly once, and each dead letter once.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.pickled import apply_elsewhere
from helpers.strategy_cases import CASES, orders

pytestmark = pytest.mark.timeout(300)

FIRST, SECOND = range(0, 6), range(3, 10)
BAD = (2, 8)


@pytest.mark.parametrize("kind", CASES)
def test_a_copy_in_a_new_process_applies_every_record_exactly_once(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    case = CASES[kind](request, tmp_path, {})
    bad = BAD if case.letters is not None else ()
    first, second = orders(FIRST, bad), orders(SECOND, bad)

    before = case.strategy.apply(first, 0)
    replayed, later = apply_elsewhere(case.strategy, [(first, 0), (second, 1)])

    expected = [o for o in range(10) if o not in bad]
    for target in case.targets:
        assert target() == expected
    assert before.rows_written + replayed.rows_written + later.rows_written == len(expected)
    assert replayed.rows_written == 0
    if case.letters is not None:
        assert sorted(case.letters.read()["offset"].to_pylist()) == list(BAD)
        case.letters.close()
