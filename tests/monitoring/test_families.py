"""The metric families the endpoint serves: the ones docs/operations.md lists, with the same
types, labels and a Kafka counterpart (or "none") each; named and described by Prometheus's
conventions, in words a Kafka user reads without the toolkit's own vocabulary."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kafka_share_eos.monitoring.families import FAMILIES, PREFIX, Family, sample_names

DOCS = Path(__file__).resolve().parents[2] / "docs"
ROW = re.compile(r"^\| `(kafka_share_eos_\w+)` \| (\w+) \|([^|]*)\|([^|]+)\|([^|]+)\|$",
                 re.MULTILINE)
# Words of the toolkit's own that a help text may not use unexplained.
JARGON = re.compile(r"\bsettled?\b|\bslots?\b|\babsorbed\b|\bamong them\b|lock_budget|"
                    r"\bsegments?\b|\breplays? absorbed\b", re.IGNORECASE)


def listed() -> dict[str, tuple[str, str, str]]:
    text = (DOCS / "operations.md").read_text()
    return {name: (kind, labels, kafka) for name, kind, labels, _, kafka in ROW.findall(text)}


def test_the_operations_page_lists_every_family_with_its_type_labels_and_kafka_metric() -> None:
    rows = listed()
    assert {name: kind for name, (kind, _, _) in rows.items()} == {
        PREFIX + family.name: family.kind for family in FAMILIES}
    for family in FAMILIES:
        _, labels, kafka = rows[PREFIX + family.name]
        extra = {label for label in family.labels if label != "topic"}
        assert set(re.findall(r"`(\w+)`", labels)) == extra, family.name
        assert kafka.strip(), family.name


@pytest.mark.parametrize("family", FAMILIES, ids=lambda family: family.name)
def test_names_and_units_follow_prometheus_conventions(family: Family) -> None:
    assert re.fullmatch(r"[a-z][a-z0-9_]*", family.name)
    assert family.name.endswith("_total") == (family.kind == "counter")
    if family.kind == "histogram" or "duration" in family.name or "seconds" in family.name:
        assert family.name.endswith("_seconds"), "times are in seconds, named so"
    assert not re.search(r"_(ms|millis|milliseconds|minutes|percent)\b", family.name)
    if family.name.endswith("_ratio"):
        assert "fraction" in family.help.lower()


@pytest.mark.parametrize("family", FAMILIES, ids=lambda family: family.name)
def test_help_texts_read_without_the_toolkits_vocabulary(family: Family) -> None:
    text = family.help
    assert text[0].isupper() and text.endswith("."), text
    assert JARGON.search(text) is None, text
    # A help text stands alone: it never defines itself by another metric's name.
    assert not re.search(r"\b[a-z]+_[a-z_]+\b", text.replace("foreachBatch", "")
                         .replace("group.share.record.lock.duration.ms", "")
                         .replace("lag_command", "")), text


def test_a_strategy_label_only_on_strategy_series_and_partition_on_partition_series() -> None:
    with_strategy = {family.name for family in FAMILIES if "strategy" in family.labels}
    assert with_strategy == {
        "strategy_batches_total", "strategy_input_rows_total", "strategy_written_rows_total",
        "strategy_duplicate_rows_total", "dead_lettered_rows_total",
        "strategy_batch_duration_seconds", "dedup_ledger_identities",
        "twophase_decisions_in_doubt"}
    per_partition = {family.name for family in FAMILIES if "partition" in family.labels}
    assert per_partition == {"records_consumed_total", "backlog_records", "log_end_offset",
                             "share_group_lag_records"}


def test_histograms_serve_buckets_sum_and_count() -> None:
    names = sample_names()
    assert {"kafka_share_eos_record_lock_held_seconds_bucket",
            "kafka_share_eos_record_lock_held_seconds_count",
            "kafka_share_eos_records_consumed_total"} <= names
