"""Batch, slot and poll sizes of the kafka-share source (no broker, no Spark): the cap is
refused where it could not hold, the slots' shares add up to it, a poll never exceeds a share."""

from __future__ import annotations

import pytest

from kafka_share_eos.source.batch_size import (
    DEFAULT_MAX_POLL_RECORDS,
    DEFAULT_SLOT_POLL_RECORDS,
    check_cap,
    poll_size,
    slot_share,
)
from kafka_share_eos.source.options import SourceOptionError


def test_the_cap_is_refused_under_after_commit_and_below_the_consumers() -> None:
    check_cap(None, after_commit=True, consumers=1)
    check_cap(100, after_commit=False, consumers=4)
    with pytest.raises(SourceOptionError, match=r"only with acknowledge=afterJournal.*KIP-1206"):
        check_cap(100, after_commit=True, consumers=1)
    with pytest.raises(SourceOptionError, match=r"\(3\) must be at least 'consumers' \(4\)"):
        check_cap(3, after_commit=False, consumers=4)


@pytest.mark.parametrize(("cap", "client", "consumers", "size"), [
    (None, None, 1, DEFAULT_MAX_POLL_RECORDS),
    (None, 70, 1, 70),
    (100, None, 1, 100),
    (100_000, None, 1, DEFAULT_MAX_POLL_RECORDS),
    (None, None, 3, DEFAULT_SLOT_POLL_RECORDS),
    (100, None, 3, 34),
    (100, 10, 3, 10),
])
def test_a_poll_never_exceeds_a_batch_or_a_slots_share(
    cap: int | None, client: int | None, consumers: int, size: int
) -> None:
    assert poll_size(cap, client, consumers) == size


def test_the_slots_shares_add_up_to_the_cap() -> None:
    for cap, consumers in ((100, 3), (7, 7), (10, 4), (1000, 6)):
        shares = [slot_share(cap, consumers, slot, poll=25) for slot in range(consumers)]
        assert sum(shares) == cap and max(shares) - min(shares) <= 1
    assert slot_share(None, 2, 1, poll=25) == 25
    assert slot_share(100, 2, 2, poll=25) == 0  # carried there by a run with more consumers
