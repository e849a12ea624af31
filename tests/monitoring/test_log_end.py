"""The backlog figure: the partitions' log-end offsets from the brokers (a ListOffsets request
through librdkafka's admin client) against the highest offsets the source journaled. The
source's own planner polls a real broker into a real journal (the embedded broker, and Apache
Kafka); the endpoint is scraped over HTTP, and its text passes Prometheus's own promtool."""

from __future__ import annotations

import subprocess
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pytest
from helpers import produce
from helpers.processes import wait_until
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from kafka_share_eos import PipelineMetrics, serve_metrics
from kafka_share_eos.journal import Journal
from kafka_share_eos.monitoring.log_end import LogEndOffsets, read_log_ends
from kafka_share_eos.proving_ground.launchers.prometheus import promtool
from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic
from kafka_share_eos.source.batch_planner import BatchPlanner
from kafka_share_eos.source.options import SourceOptions

pytestmark = pytest.mark.timeout(180)

Series = dict[tuple[str, frozenset[tuple[str, str]]], float]


def options(topic: ShareTopic, journal: Path, **extra: str) -> dict[str, str]:
    return {"kafka.bootstrap.servers": topic.bootstrap_servers,
            "kafka.share.group.id": topic.group_id, "subscribe": topic.topic,
            "journalPath": str(journal), "pollTimeoutMs": "3000", **extra}


@contextmanager
def watched(topic: ShareTopic, journal: Path, poll_records: int
            ) -> Iterator[tuple[PipelineMetrics, str, BatchPlanner]]:
    """The pipeline's endpoint (its URL), asking the brokers at each scrape rather than every
    10 s, beside the source's own planner polling into ``journal``."""
    given = options(topic, journal, **{"kafka.max.poll.records": str(poll_records)})
    pipeline = PipelineMetrics("orders", given)
    assert pipeline.log_ends is not None
    pipeline.log_ends.every_s = 0
    parsed = SourceOptions.parse(given)
    planning = BatchPlanner(parsed, Journal(parsed.journal_path))
    try:
        with serve_metrics(pipeline, port=0, addr="127.0.0.1",
                           registry=CollectorRegistry()) as server:
            yield pipeline, server.url, planning
    finally:
        planning.close()


def scrape(url: str) -> tuple[str, Series]:
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    return text, {(sample.name, frozenset(sample.labels.items())): sample.value
                  for family in text_string_to_metric_families(text)
                  for sample in family.samples}


def per_partition(samples: Series, name: str) -> dict[int, float]:
    return {int(dict(labels)["partition"]): value for (metric, labels), value in samples.items()
            if metric == name}


def promtool_accepts(text: str) -> None:
    outcome = subprocess.run([str(promtool()), "check", "metrics"], input=text,
                             capture_output=True, text=True, timeout=60, check=False)
    assert outcome.returncode == 0 and not outcome.stdout.strip(), (
        outcome.stdout + outcome.stderr)


def journaled_offsets(journal: Path) -> dict[int, list[int]]:
    """The offsets in the journal's segments now, per partition."""
    reading = Journal(str(journal))
    tables = [reading.read(seq) for seq in reading.sequences()]
    rows = pa.concat_tables(tables) if tables else None
    found: dict[int, list[int]] = {}
    if rows is not None:
        for partition, offset in zip(rows["partition"].to_pylist(), rows["offset"].to_pylist(),
                                     strict=True):
            found.setdefault(partition, []).append(offset)
    return found


@pytest.mark.partitions(3)
def test_the_backlog_follows_the_journal_and_the_log_end(
    share_topic: ShareTopic, tmp_path: Path,
) -> None:
    topic = share_topic
    produce(topic.bootstrap_servers, topic.topic, [b"a%d" % i for i in range(30)],
            partitions=3)
    with watched(topic, tmp_path / "journal", 4) as (pipeline, url, source):
        scrape(url)
        assert pipeline.log_ends is not None
        pipeline.log_ends.wait()
        _, samples = scrape(url)
        assert per_partition(samples, "kafka_share_eos_log_end_offset") == {0: 10, 1: 10, 2: 10}
        # Nothing journaled yet: no backlog series, which would claim a position, and every
        # partition's count at 0, so that rate() sees the first records.
        assert per_partition(samples, "kafka_share_eos_backlog_records") == {}
        assert per_partition(samples, "kafka_share_eos_records_consumed_total") == {
            0: 0, 1: 0, 2: 0}

        # One batch journaled and not yet acknowledged: the backlog counts from it at once.
        end = source.latest(0, None)
        found = journaled_offsets(tmp_path / "journal")
        assert found
        _, samples = scrape(url)
        assert per_partition(samples, "kafka_share_eos_backlog_records") == {
            partition: 10 - max(offsets) - 1 for partition, offsets in found.items()}
        assert per_partition(samples, "kafka_share_eos_records_consumed_total") == {
            0: 0, 1: 0, 2: 0, **{partition: len(offsets) for partition, offsets in found.items()}}

        # Drained: every record journaled once, no backlog left.
        while (after := source.latest(end, None)) != end:
            end = after
        _, samples = scrape(url)
        assert per_partition(samples, "kafka_share_eos_records_consumed_total") == {
            0: 10, 1: 10, 2: 10}
        assert per_partition(samples, "kafka_share_eos_backlog_records") == {0: 0, 1: 0, 2: 0}

        # New records on the log: the backlog is theirs, as soon as the brokers are asked.
        produce(topic.bootstrap_servers, topic.topic, [b"b%d" % i for i in range(7)],
                partitions=3)

        def backlog() -> dict[int, float]:
            return per_partition(scrape(url)[1], "kafka_share_eos_backlog_records")

        wait_until(lambda: backlog() == {0: 3, 1: 2, 2: 2}, 30, "the backlog of 7 records")
        text, samples = scrape(url)
        assert sum(per_partition(samples, "kafka_share_eos_records_consumed_total").values()) == 30
    promtool_accepts(text)


@pytest.mark.kafka
@pytest.mark.partitions(2)
def test_log_end_offsets_and_backlog_on_apache_kafka(kafka_topic: ShareTopic,
                                                     tmp_path: Path) -> None:
    written = produce(kafka_topic.bootstrap_servers, kafka_topic.topic,
                      [b"v%d" % i for i in range(25)], partitions=2)
    ends = {partition: max(o for p, o in written if p == partition) + 1 for partition in (0, 1)}
    client = {"bootstrap.servers": kafka_topic.bootstrap_servers}
    assert read_log_ends(client, [kafka_topic.topic]) == {
        (kafka_topic.topic, partition): end for partition, end in ends.items()}
    offsets = LogEndOffsets(client, [kafka_topic.topic], every_s=0)
    offsets.refresh()
    offsets.wait()
    assert offsets.offsets == read_log_ends(client, [kafka_topic.topic])

    with watched(kafka_topic, tmp_path / "journal", 5) as (_, url, source):
        wait_until(lambda: source.latest(0, None) == 1, 60, "a first batch journaled")
        found = journaled_offsets(tmp_path / "journal")
        expected = {partition: ends[partition] - max(offsets) - 1
                    for partition, offsets in found.items()}

        def backlog() -> dict[int, float]:
            return per_partition(scrape(url)[1], "kafka_share_eos_backlog_records")

        wait_until(lambda: backlog() == expected, 30, f"the backlog {expected}")
        text, _ = scrape(url)
    promtool_accepts(text)
