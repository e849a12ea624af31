"""``kafka-share-eos kafka-tool`` runs Kafka's own tools against the Kafka the toolkit starts."""

from __future__ import annotations

import subprocess

import pytest
from helpers import consume, count_at_least, produce, share_consumer
from helpers.doc_blocks import ROOT, blocks
from helpers.scripts import CLI, CLI_ENV

from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic

pytestmark = [pytest.mark.kafka, pytest.mark.timeout(180)]



def _tool(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLI, "kafka-tool", *arguments], capture_output=True, text=True,
                          env=CLI_ENV, timeout=120, check=False)


def _lag(topic: ShareTopic) -> dict[str, int]:
    described = _tool("share-groups", "--bootstrap-server", topic.bootstrap_servers,
                      "--describe", "--group", topic.group_id)
    assert described.returncode == 0, described.stderr
    rows = [line.split() for line in described.stdout.splitlines()
            if line.startswith(topic.group_id)]
    return {row[2]: int(row[4]) for row in rows if row[1] == topic.topic}


@pytest.mark.partitions(2)
def test_share_groups_reports_the_groups_lag(kafka_topic: ShareTopic) -> None:
    produce(kafka_topic.bootstrap_servers, kafka_topic.topic,
            [b"%d" % n for n in range(30)], partitions=2)
    with share_consumer(kafka_topic.bootstrap_servers, kafka_topic.group_id,
                        [kafka_topic.topic]) as consumer:
        consumed = consume(consumer, until=count_at_least(30), timeout=60)
    assert len({d.identity for d in consumed}) == 30
    assert _lag(kafka_topic) == {"0": 0, "1": 0}

    produce(kafka_topic.bootstrap_servers, kafka_topic.topic,
            [b"%d" % n for n in range(12)], partitions=2)

    assert _lag(kafka_topic) == {"0": 6, "1": 6}


def test_configs_shows_the_share_groups_settings(kafka_topic: ShareTopic) -> None:
    described = _tool("configs", "--bootstrap-server", kafka_topic.bootstrap_servers,
                      "--describe", "--entity-type", "groups",
                      "--entity-name", kafka_topic.group_id)

    assert described.returncode == 0, described.stderr
    assert "share.auto.offset.reset=earliest" in described.stdout


def test_arguments_after_the_name_are_the_tools_own() -> None:
    helped = _tool("features", "--help")

    assert helped.returncode == 0, helped.stderr
    assert "usage: kafka-features" in helped.stdout


def test_an_unknown_tool_is_refused_with_the_known_ones() -> None:
    refused = _tool("share-group")

    assert refused.returncode == 1
    assert "Traceback" not in refused.stderr
    assert "no tool 'share-group'" in refused.stderr
    assert "share-groups, configs, features" in refused.stderr


def test_the_docs_tool_lines_run_against_the_toolkits_kafka(kafka_topic: ShareTopic) -> None:
    # docs/real-cluster.md's lines, against this cluster and a group it configured.
    lines = [block_line.split()[2:] for block in blocks(ROOT / "docs" / "real-cluster.md")
             for block_line in block.code.splitlines()
             if block_line.startswith("kafka-share-eos kafka-tool ")]
    assert len(lines) >= 3
    for words in lines:
        arguments = [kafka_topic.bootstrap_servers if word == "127.0.0.1:9092"
                     else kafka_topic.group_id if word == "jobs-eos" else word
                     for word in words]
        done = _tool(*arguments)
        assert done.returncode == 0, f"{' '.join(words)}: {done.stderr}"
