"""A batch's metrics as one JSON object: read back as written, fields a later release adds are
ignored, a newer format is refused naming where it is (no files, no broker)."""

from __future__ import annotations

import dataclasses
import json

import pytest
from helpers.metrics import batch_metrics

from kafka_share_eos import formats
from kafka_share_eos.errors import UnsupportedFormatError
from kafka_share_eos.journal.metrics import BatchMetrics, merged_partitions

SLOTS = [{"slot": 0, "records": 6, "member": "11-aaa"}, {"slot": 1, "records": 4}]


def test_metrics_read_back_equal_to_those_written() -> None:
    written = dataclasses.replace(batch_metrics(9), first_seq=7, consumers=SLOTS)
    text = written.to_json()
    assert BatchMetrics.from_json(text, "m.json") == written
    assert BatchMetrics.from_json(text.encode(), "m.json") == written


def test_the_json_carries_its_format_and_every_field() -> None:
    raw = json.loads(batch_metrics(3).to_json())
    assert raw[formats.FIELD] == formats.BATCH_METRICS
    assert raw["seq"] == raw["first_seq"] == 3
    assert (raw["records"], raw["redelivered"], raw["acknowledged"]) == (10, 2, 10)
    assert raw["ack_policy"] == "afterCommit" and raw["consumers"] == []
    assert list(raw) == sorted(raw)


def test_a_batch_of_the_runner_has_no_consumers() -> None:
    fields = json.loads(batch_metrics(4).to_json())
    del fields["consumers"]
    assert BatchMetrics.from_json(json.dumps(fields), "m.json").consumers == []


def test_fields_a_later_release_adds_are_ignored() -> None:
    fields = {**json.loads(batch_metrics(5).to_json()), "fetch_bytes": 1024, "zone": "b"}
    assert BatchMetrics.from_json(json.dumps(fields), "m.json") == batch_metrics(5)


def test_metrics_written_before_formats_were_versioned_are_read() -> None:
    fields = json.loads(batch_metrics(6).to_json())
    del fields[formats.FIELD]
    assert BatchMetrics.from_json(json.dumps(fields), "m.json") == batch_metrics(6)


def test_a_newer_format_is_refused_naming_where_it_is() -> None:
    fields = {**json.loads(batch_metrics(7).to_json()), formats.FIELD: formats.BATCH_METRICS + 1}
    with pytest.raises(UnsupportedFormatError,
                       match=r"batch metrics at /j/_metrics/7\.json is in format '2'"):
        BatchMetrics.from_json(json.dumps(fields), "/j/_metrics/7.json")


def test_the_partitions_of_a_batchs_polls_are_merged_and_read_back() -> None:
    merged = merged_partitions(
        [{"topic": "b", "partition": 0, "records": 2, "last_offset": 9},
         {"topic": "a", "partition": 1, "records": 3, "last_offset": 4}],
        [{"topic": "a", "partition": 1, "records": 1, "last_offset": 12}])
    assert merged == [{"topic": "a", "partition": 1, "records": 4, "last_offset": 12},
                      {"topic": "b", "partition": 0, "records": 2, "last_offset": 9}]
    written = dataclasses.replace(batch_metrics(2), partitions=merged)
    assert BatchMetrics.from_json(written.to_json(), "m.json").partitions == merged
    assert batch_metrics(2).partitions == []
