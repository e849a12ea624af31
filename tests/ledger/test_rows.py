"""The ledger's row helpers: ranges of offsets per share-partition."""

from __future__ import annotations

import pytest
from helpers.ledgers import records

from kafka_share_eos.ledger.rows import offset_ranges

pytestmark = pytest.mark.timeout(120)


def test_offset_ranges_split_at_large_gaps() -> None:
    batch = records(("t", 0, 5), ("t", 0, 3), ("t", 1, 4), ("t", 0, 2000), ("t", 0, 2001),
                    ("t", 0, 9000), ("t", 0, 4), ("u", 0, 7))
    assert offset_ranges(batch, max_gap=1000) == {
        ("t", 0): [(3, 5), (2000, 2001), (9000, 9000)], ("t", 1): [(4, 4)], ("u", 0): [(7, 7)],
    }
    assert offset_ranges(batch, max_gap=1000, max_ranges=2)[("t", 0)] == [(3, 9000)]
