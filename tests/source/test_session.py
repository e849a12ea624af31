"""The runner's share session on the embedded broker: what it ACCEPTs never comes back, what it
RELEASEs (on settle, close or SIGTERM) comes back with a higher delivery count, what it REJECTs
is counted apart and gone, and a closed session refuses every call."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from types import FrameType
from typing import Any

import pytest
from helpers import produce

from kafka_share_eos.errors import SessionClosed
from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic
from kafka_share_eos.source.session import ACCEPT, RELEASE, ShareSession

pytestmark = pytest.mark.timeout(120)

RECORDS = 12
Identity = tuple[str, int, int]


def identity(message: Any) -> Identity:
    return (message.topic(), message.partition(), message.offset())


def fill(topic: ShareTopic) -> set[Identity]:
    written = produce(topic.bootstrap_servers, topic.topic, (b"%d" % i for i in range(RECORDS)),
                      partitions=topic.partitions)
    return {(topic.topic, partition, offset) for partition, offset in written}


def open_session(topic: ShareTopic) -> ShareSession:
    return ShareSession({"bootstrap.servers": topic.bootstrap_servers,
                         "group.id": topic.group_id, "share.acknowledgement.mode": "explicit"},
                        [topic.topic])


def poll_held(session: ShareSession, timeout_s: float = 30.0) -> list[Any]:
    """Poll until a poll returns records; they are then held."""
    deadline = time.monotonic() + timeout_s
    while not (held := session.poll(500)):
        assert time.monotonic() < deadline, "the share group delivered nothing"
    return held


def accept_all(session: ShareSession, wanted: int, timeout_s: float = 30.0) -> list[Any]:
    """Poll and ACCEPT until ``wanted`` records were delivered (or the time is up)."""
    delivered: list[Any] = []
    deadline = time.monotonic() + timeout_s
    while len(delivered) < wanted and time.monotonic() < deadline:
        delivered += session.poll(500)
        session.settle(ACCEPT)
    return delivered


def delivery_counts(topic: ShareTopic) -> dict[Identity, int]:
    """Every record a new member of the group is given (and ACCEPTs), with its delivery count."""
    later = open_session(topic)
    try:
        return {identity(m): m.delivery_count() for m in accept_all(later, RECORDS)}
    finally:
        later.close()


@pytest.fixture
def session(share_topic: ShareTopic) -> Iterator[ShareSession]:
    fill(share_topic)
    opened = open_session(share_topic)
    yield opened
    opened.close()


def test_accepted_records_are_counted_and_never_delivered_again(
    share_topic: ShareTopic, session: ShareSession
) -> None:
    delivered = accept_all(session, RECORDS)
    assert len({identity(m) for m in delivered}) == len(delivered) == RECORDS
    assert all(m.delivery_count() == 1 for m in delivered)
    assert (session.stats.accepted, session.stats.released, session.stats.rejected) == (
        RECORDS, 0, 0)
    assert session.held == []
    session.close()

    later = open_session(share_topic)
    try:
        assert accept_all(later, 1, timeout_s=3.0) == []
    finally:
        later.close()


def test_released_records_come_back_with_a_higher_delivery_count(session: ShareSession) -> None:
    held = poll_held(session)
    assert session.held == held and session.acquired_at <= time.monotonic()
    released = {identity(m) for m in held}
    session.settle(RELEASE)
    assert session.stats.released == len(held) and session.stats.accepted == 0
    assert session.held == []

    again = {identity(m): m.delivery_count()
             for m in accept_all(session, RECORDS) if identity(m) in released}
    assert set(again) == released
    assert set(again.values()) == {2}


def test_rejected_records_are_counted_apart_and_never_come_back(
    share_topic: ShareTopic, session: ShareSession
) -> None:
    held = poll_held(session)
    refused = identity(held[0])
    session.settle(ACCEPT, reject={refused, (share_topic.topic, 99, 0)})
    assert session.stats.rejected == 1
    assert session.stats.accepted == len(held) - 1

    rest = accept_all(session, RECORDS - len(held))
    assert session.stats.accepted == RECORDS - 1
    assert refused not in {identity(m) for m in rest}
    assert accept_all(session, 1, timeout_s=2.0) == []


def test_a_second_poll_before_the_acknowledgement_is_refused(session: ShareSession) -> None:
    held = poll_held(session)
    with pytest.raises(RuntimeError, match="previous poll are not acknowledged yet"):
        session.poll(100)
    assert session.held == held


def test_closing_releases_what_is_held_leaves_the_group_and_refuses_later_calls(
    share_topic: ShareTopic, session: ShareSession
) -> None:
    closed: list[bool] = []
    session.on_close = lambda: closed.append(session.closed)
    held = {identity(m) for m in poll_held(session)}
    session.close()
    assert closed == [True] and session.closed
    assert session.stats.released == len(held) and session.held == []
    session.close()
    assert closed == [True]
    with pytest.raises(SessionClosed, match="closed"):
        session.poll(100)
    with pytest.raises(SessionClosed, match="closed"):
        session.settle(ACCEPT)

    counts = delivery_counts(share_topic)
    assert len(counts) == RECORDS
    assert {counts[i] for i in held} == {2}


def test_sigterm_releases_what_is_held_then_hands_the_signal_on(share_topic: ShareTopic) -> None:
    written = fill(share_topic)
    received: list[int] = []

    def previous(signum: int, frame: FrameType | None) -> None:
        received.append(signum)

    # The handler the session's hook finds installed, and hands the signal to.
    original = signal.signal(signal.SIGTERM, previous)
    try:
        terminated = open_session(share_topic)
        held = {identity(m) for m in poll_held(terminated)}
        os.kill(os.getpid(), signal.SIGTERM)
        deadline = time.monotonic() + 10
        while not received:
            assert time.monotonic() < deadline, "SIGTERM was not handed on"
            time.sleep(0.01)
        assert terminated.closed
        assert terminated.stats.released == len(held)
        assert signal.getsignal(signal.SIGTERM) is previous
    finally:
        signal.signal(signal.SIGTERM, original)
    assert received == [signal.SIGTERM]

    counts = delivery_counts(share_topic)
    assert set(counts) == written
    assert {counts[i] for i in held} == {2}
