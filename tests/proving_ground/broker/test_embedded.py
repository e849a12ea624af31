"""The embedded broker's own contract: argument checking, reachability, offset reset."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import pytest
from helpers import consume, count_at_least, never, produce, share_consumer

from kafka_share_eos import EmbeddedBroker, TopicSpec

pytestmark = pytest.mark.timeout(90)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [("jobs", TopicSpec("jobs", 1)), ("jobs:4", TopicSpec("jobs", 4)),
     (" my.topic_v-2:12 ", TopicSpec("my.topic_v-2", 12))],
)
def test_topic_specs_parse(spec: str, expected: TopicSpec) -> None:
    assert TopicSpec.parse(spec) == expected


@pytest.mark.parametrize(
    "spec", ["bad topic", "jobs:", "jobs:0", "jobs:x", "jobs:-1", ":3", "", "..", "a:1:2",
             "x" * 250, "jobs/1"],
)
def test_garbled_topic_spec_is_named_in_the_error(spec: str) -> None:
    with pytest.raises(ValueError, match="bad topic spec") as raised:
        EmbeddedBroker([spec])
    assert repr(spec) in str(raised.value)


@pytest.mark.parametrize(
    ("option", "value"),
    [("record_lock_duration_ms", -1), ("record_lock_duration_ms", 0),
     ("session_timeout_ms", -5000), ("heartbeat_interval_ms", 0),
     ("record_lock_duration_ms", 1.5), ("max_delivery_attempts", 0),
     ("max_delivery_attempts", True)],
)
def test_bad_share_group_setting_is_named(option: str, value: Any) -> None:
    with pytest.raises(ValueError, match=option):
        EmbeddedBroker(**{option: value})


@pytest.mark.parametrize("reset", ["smallest", "EARLIEST", ""])
def test_bad_auto_offset_reset(reset: Any) -> None:
    with pytest.raises(ValueError, match="auto_offset_reset"):
        EmbeddedBroker(auto_offset_reset=reset)


def test_conflicting_partition_counts() -> None:
    with pytest.raises(ValueError, match="'jobs' is given with 2 and 3 partitions"):
        EmbeddedBroker(["jobs:2", "jobs:3"])
    with EmbeddedBroker(["jobs:2"]) as broker:
        broker.create_topic("jobs", 2)  # same count: nothing to do
        with pytest.raises(ValueError, match="'jobs' already exists with 2 partitions, not 3"):
            broker.create_topic("jobs", 3)
        with pytest.raises(ValueError, match="partitions of topic 'other'"):
            broker.create_topic("other", 0)
        assert broker.topics == {"jobs": 2}


def test_one_topic_given_alone_is_one_topic() -> None:
    with EmbeddedBroker("jobs:4") as broker:
        assert broker.topics == {"jobs": 4}
    with EmbeddedBroker(TopicSpec("orders", 2)) as broker:
        assert broker.topics == {"orders": 2}


def test_not_running_is_reported() -> None:
    broker = EmbeddedBroker(["jobs"])
    with pytest.raises(RuntimeError, match="not running"):
        _ = broker.bootstrap_servers
    with broker:
        assert broker.topics == {"jobs": 1}
    with pytest.raises(RuntimeError, match="not running"):
        broker.create_topic("late")


def test_bootstrap_address_is_reachable_from_another_process() -> None:
    script = textwrap.dedent(
        """
        import sys
        from confluent_kafka import Producer
        producer = Producer({"bootstrap.servers": sys.argv[1]})
        for i in range(5):
            producer.produce("jobs", value=b"from-child-%d" % i, partition=i % 3)
        sys.exit(producer.flush(30))
        """
    )
    with EmbeddedBroker(["jobs:3"]) as broker:
        subprocess.run([sys.executable, "-c", script, broker.bootstrap_servers],
                       check=True, timeout=60)
        with share_consumer(broker.bootstrap_servers, "g", ["jobs"]) as consumer:
            deliveries = consume(consumer, until=count_at_least(5), timeout=30)
    assert sorted(d.value for d in deliveries) == [b"from-child-%d" % i for i in range(5)]
    assert {d.partition for d in deliveries} == {0, 1, 2}


def test_latest_offset_reset_skips_records_written_before_the_group_started() -> None:
    with EmbeddedBroker(["jobs:2"], auto_offset_reset="latest") as broker:
        produce(broker.bootstrap_servers, "jobs", [b"old-1", b"old-2"], partitions=2)
        with share_consumer(broker.bootstrap_servers, "g", ["jobs"]) as consumer:
            # The group's start offsets are fixed when its members first fetch.
            before = consume(consumer, until=never, timeout=2)
            produce(broker.bootstrap_servers, "jobs", [b"new-1", b"new-2"], partitions=2)
            after = consume(consumer, until=count_at_least(2), timeout=30)
            after += consume(consumer, until=never, timeout=1)
    assert before == []
    assert sorted(d.value for d in after) == [b"new-1", b"new-2"]
    assert {d.offset for d in after} == {1}
