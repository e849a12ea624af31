"""Share-group lag from Kafka's own tool: its --describe table parsed, and on Apache Kafka the
exported lag is the records produced less the records a consumer acknowledged."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import consume, produce, share_consumer
from helpers.processes import wait_until
from prometheus_client import CollectorRegistry

from kafka_share_eos import PipelineMetrics, serve_metrics
from kafka_share_eos.monitoring.share_lag import parse_describe
from kafka_share_eos.proving_ground import streams
from kafka_share_eos.proving_ground.launchers.kafka_dist import tool_command
from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic

# What kafka-share-groups.sh printed against Kafka 4.4.0 (docs/operations.md).
DESCRIBED = """
GROUP           TOPIC           PARTITION  START-OFFSET  LAG
g1              orders          0          -             -
g1              orders          1          0             50
"""


def test_the_describe_table_is_read_per_share_partition() -> None:
    assert parse_describe(DESCRIBED) == {("orders", 1): 50}
    assert parse_describe("Share group 'g1' has no active members.\n") == {}


@pytest.mark.kafka
@pytest.mark.partitions(1)
@pytest.mark.timeout(300)
def test_the_lag_kafka_reports_is_exported(kafka_topic: ShareTopic, tmp_path: Path) -> None:
    bootstrap, topic = kafka_topic.bootstrap_servers, kafka_topic.topic
    produce(bootstrap, topic, [b"first-%d" % i for i in range(30)])
    with share_consumer(bootstrap, kafka_topic.group_id, [topic]) as consumer:
        accepted = consume(consumer, timeout=60, until=lambda deliveries: len(deliveries) > 0)
    produce(bootstrap, topic, [b"later-%d" % i for i in range(20)])
    tool = tool_command("share-groups")
    options = streams.source_options(bootstrap, kafka_topic.group_id, topic, tmp_path / "j")
    pipeline = PipelineMetrics("orders", options, lag_command=tool, log_ends=False)
    registry = CollectorRegistry()
    labels = {"query": "orders", "group": kafka_topic.group_id, "topic": topic,
              "partition": "0"}
    with serve_metrics(pipeline, port=0, addr="127.0.0.1", registry=registry):
        def scraped_lag() -> float | None:
            # A scrape starts the tool in the background; the next one sees what it printed.
            value = registry.get_sample_value("kafka_share_eos_share_group_lag_records",
                                              labels)
            assert pipeline.lag is not None
            pipeline.lag.wait()
            return value

        wait_until(lambda: scraped_lag() is not None, 120, "the lag from the tool")
        assert scraped_lag() == 50 - len(accepted)
