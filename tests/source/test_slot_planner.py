"""The planner of executor-side slots, without a broker or Spark: it plans without a consumer
and ends a drain only on a batch whose every slot found nothing and for which every consumer
still in the group polled.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

import pytest
from helpers.slots import options
from typer.testing import CliRunner

from kafka_share_eos.cli.main import app
from kafka_share_eos.journal import Journal
from kafka_share_eos.journal.leases import EXECUTOR, LEASES_DIR
from kafka_share_eos.journal.metrics import BatchMetrics
from kafka_share_eos.pipeline_status import journal_status
from kafka_share_eos.source.slot_planner import SlotPlanner
from kafka_share_eos.source.slots import SlotPartition

pytestmark = pytest.mark.timeout(120)


def test_the_planner_needs_no_consumer_and_ends_a_drain_on_an_empty_batch(
    tmp_path: Path,
) -> None:
    opts = options("localhost:1", tmp_path / "journal")
    journal = Journal(opts.journal_path)
    planner = SlotPlanner(opts, journal)
    planner.drain()
    assert planner.latest(0) == 1
    write_report(tmp_path / "journal", 1, 0, records=3)
    write_report(tmp_path / "journal", 1, 1, records=0)
    assert planner.latest(1) == 2  # records came: the drain goes on
    write_report(tmp_path / "journal", 2, 0, records=0)
    assert planner.latest(2) == 3  # slot 1 did not report: it may have found records
    write_report(tmp_path / "journal", 3, 0, records=0)
    write_report(tmp_path / "journal", 3, 1, records=0)
    # Every slot found nothing in a quick poll: the next batch's slots wait the idle time.
    assert planner.latest(3) == 4
    idle = {p.seq: p.idle_ms for p in planner.partitions(0, 4) if isinstance(p, SlotPartition)}
    assert idle == {1: 0, 2: 0, 3: 0, 4: opts.available_now_idle_ms}
    write_report(tmp_path / "journal", 4, 0, records=0)
    write_report(tmp_path / "journal", 4, 1, records=0)
    assert planner.latest(4) == 4  # every slot waited and found nothing: the drain ends
    status = journal_status(str(tmp_path / "journal"))
    assert [m.seq for m in status.batches] == [1, 2, 3, 4]
    assert status.consumers == [{"slot": 0, "records": 3}, {"slot": 1, "records": 0}]
    env = {"COLUMNS": "200", "NO_COLOR": "1"}
    shown = CliRunner().invoke(app, ["status", "--journal", opts.journal_path, "--json"], env=env)
    assert json.loads(shown.stdout)["consumers"] == status.consumers
    table = CliRunner().invoke(app, ["status", "--journal", opts.journal_path], env=env)
    assert "records per consumer" in table.output


def test_a_batch_counts_the_records_of_its_slots_per_partition(tmp_path: Path) -> None:
    opts = options("localhost:1", tmp_path / "journal")
    planner = SlotPlanner(opts, Journal(opts.journal_path))
    assert planner.latest(0) == 1
    write_report(tmp_path / "journal", 1, 0, records=5, partitions=[
        {"topic": "t", "partition": 0, "records": 2, "last_offset": 7},
        {"topic": "t", "partition": 1, "records": 3, "last_offset": 4}])
    write_report(tmp_path / "journal", 1, 1, records=4, partitions=[
        {"topic": "t", "partition": 1, "records": 4, "last_offset": 9}])
    assert planner.latest(1) == 2
    (batch,) = journal_status(str(tmp_path / "journal")).batches
    assert batch.partitions == [
        {"topic": "t", "partition": 0, "records": 2, "last_offset": 7},
        {"topic": "t", "partition": 1, "records": 7, "last_offset": 9}]


def write_report(
    journal: Path, seq: int, slot: int, records: int, member: str = "m",
    partitions: list[dict[str, object]] | None = None,
) -> None:
    directory = journal / "_metrics" / "slots"
    directory.mkdir(parents=True, exist_ok=True)
    report = BatchMetrics(
        seq=seq, first_seq=seq, records=records, redelivered=0, acknowledged=records,
        ack_failures=0, ack_failed_partitions=0, lock_held_ms=5.0, lock_budget_used=0.0,
        ack_policy="afterJournal", planned_at="2026-01-01T00:00:00+00:00",
        settled_at="2026-01-01T00:00:01+00:00",
        consumers=[{"slot": slot, "records": records, "member": member}],
        partitions=partitions or [],
    )
    (directory / f"{seq:020d}-{slot:04d}.json").write_text(report.to_json())


def test_a_drain_ends_once_every_consumer_in_the_group_found_nothing(tmp_path: Path) -> None:
    opts = options("localhost:1", tmp_path / "journal")
    planner = SlotPlanner(opts, Journal(opts.journal_path))
    planner.drain()
    assert planner.latest(0) == 1
    # Three live members (this process) take turns at two slots.
    for member in ("a", "b", "c"):
        (tmp_path / "journal" / LEASES_DIR / f"{member}.json").write_text(json.dumps(
            {"run": planner.run, "until": time.time() + 60, "kind": EXECUTOR,
             "host": socket.gethostname(), "pid": os.getpid()}
        ))
    write_report(tmp_path / "journal", 1, 0, records=5, member="a")
    write_report(tmp_path / "journal", 1, 1, records=5, member="c")
    assert planner.latest(1) == 2
    write_report(tmp_path / "journal", 2, 0, records=0, member="a")
    write_report(tmp_path / "journal", 2, 1, records=0, member="b")
    assert planner.latest(2) == 3  # the next batch listens
    write_report(tmp_path / "journal", 3, 0, records=0, member="a")
    write_report(tmp_path / "journal", 3, 1, records=0, member="b")
    # Every slot found nothing, but "c" found records last time and may hold more partitions.
    assert planner.latest(3) == 4
    write_report(tmp_path / "journal", 4, 0, records=0, member="c")
    write_report(tmp_path / "journal", 4, 1, records=0, member="b")
    assert planner.latest(4) == 4
