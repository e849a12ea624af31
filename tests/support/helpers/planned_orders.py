"""Shared by the tests of the batch planner and of its SIGTERM hook: a private embedded broker
holding ``RECORDS`` orders, and what a planner journaled or left for the group."""

from __future__ import annotations

from helpers import consume, count_at_least, share_consumer
from kafka_share_eos import EmbeddedBroker
from kafka_share_eos.journal import Journal

TOPIC = "orders"
GROUP = "orders-eos"
RECORDS = 60


def identities(journal: Journal, seqs: list[int]) -> list[tuple[str, int, int]]:
    rows = [row for seq in seqs for row in journal.read(seq).to_pylist()]
    return sorted((r["topic"], r["partition"], r["offset"]) for r in rows)


def redelivered(broker: EmbeddedBroker, seconds: float) -> list[tuple[int, int, int]]:
    """What another member of the group can acquire within ``seconds`` (ACCEPTing it)."""
    with share_consumer(broker.bootstrap_servers, GROUP, [TOPIC]) as consumer:
        got = consume(consumer, until=count_at_least(RECORDS), timeout=seconds)
    return sorted((d.partition, d.offset, d.delivery_count) for d in got)


def assert_only_unjournaled_come_back(
    broker: EmbeddedBroker, journaled: set[tuple[int, int]]
) -> None:
    """Journaled means ACCEPTed: those records never come back; every other record does."""
    back = {(p, o) for p, o, _ in redelivered(broker, 10)}
    assert back.isdisjoint(journaled)
    assert len(back) + len(journaled) == RECORDS
