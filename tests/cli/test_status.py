"""``kafka-share-eos status`` on journals written by a real Spark stream and by the planner."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from helpers import produce
from helpers.messages import messages
from helpers.streaming import run_available_now, share_stream
from typer.testing import CliRunner

from kafka_share_eos import EmbeddedBroker
from kafka_share_eos.cli.main import app
from kafka_share_eos.deadletter import Rejection, letters, open_dead_letters
from kafka_share_eos.journal import Journal
from kafka_share_eos.journal.segments import segment_name
from kafka_share_eos.proving_ground.launchers.gcs_server import GcsServer
from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic
from kafka_share_eos.source.batch_planner import BatchPlanner
from kafka_share_eos.source.conversion import to_record_batch
from kafka_share_eos.source.options import SourceOptions

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = pytest.mark.timeout(240)


def status_json(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["status", *args, "--json"])
    assert result.exit_code == 0, result.output
    report: dict[str, Any] = json.loads(result.output)
    return report


@pytest.mark.spark
def test_status_of_a_drained_stream_counts_every_record(
    spark: SparkSession, share_topic: ShareTopic, tmp_path: Path
) -> None:
    produce(share_topic.bootstrap_servers, share_topic.topic, (b"%d" % i for i in range(90)),
            partitions=share_topic.partitions)
    seen: dict[int, int] = {}

    def count(batch: DataFrame, batch_id: int) -> None:
        seen[batch_id] = batch.count()

    journal = tmp_path / "journal"
    df = share_stream(spark, share_topic, journal, **{"kafka.max.poll.records": "30"},
                      availableNowIdleMs="2000")
    run_available_now(df, tmp_path / "checkpoint", count)

    report = status_json("--journal", str(journal))
    # Drained: every batch was ACCEPTed by the planning after it, then purged.
    assert report["journaled"] == 0 and report["pending"] == []
    assert report["acknowledged"] == sum(1 for rows in seen.values() if rows) >= 3
    totals = report["totals"]
    # On a loaded machine a cold first batch can outlive the lock; its records then come back
    # redelivered, and the metrics must say so consistently.
    assert totals["records"] == sum(seen.values()) == 90 + totals["redelivered"]
    assert totals["acknowledged"] + totals["ack_failures"] == totals["records"]
    assert totals["max_lock_budget_used"] > 0
    assert report["last_batch"]["ack_policy"] == "afterCommit"
    assert report["dead_letters"] is None


def test_status_shows_pending_segments_and_dead_letters(tmp_path: Path) -> None:
    with EmbeddedBroker(topics=["orders:2"]) as broker:
        produce(broker.bootstrap_servers, "orders", (b"%d" % i for i in range(50)), partitions=2)
        options = SourceOptions.parse({
            "kafka.bootstrap.servers": broker.bootstrap_servers,
            "kafka.share.group.id": "orders-status", "subscribe": "orders",
            "journalPath": str(tmp_path / "journal"), "kafka.max.poll.records": "20",
            "pollTimeoutMs": "3000",
        })
        journal = Journal(options.journal_path)
        planner = BatchPlanner(options, journal)
        try:
            assert planner.latest(0, None) == 1
            held = status_json("--journal", options.journal_path)
            assert held["segments"] == [{"seq": 1, "rows": 20, "settled": False}]
            assert held["pending"] == [1] and held["acknowledged"] == 0
            assert planner.latest(1, None) == 2
            segment = journal.read(2)
        finally:
            planner.close()

    dead = f"sqlite:///{tmp_path / 'dead.db'}"
    sink = open_dead_letters(dead)
    rejected = [Rejection(i, "apply", ValueError("bad amount")) for i in (0, 3)]
    assert sink.write(letters(segment, rejected, strategy="status-test", batch_id=1)) == 2
    sink.close()

    report = status_json("--journal", options.journal_path, "--dead-letters", dead)
    assert report["journaled"] == 1 and report["pending"] == [2]
    assert report["segments"] == [{"seq": 2, "rows": segment.num_rows, "settled": False}]
    assert report["acknowledged"] == 1
    assert report["totals"]["records"] == report["totals"]["acknowledged"] == 20
    assert report["dead_letters"] == 2

    human = CliRunner().invoke(app, ["status", "--journal", options.journal_path],
                               env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert human.exit_code == 0, human.output
    assert "1 segment journaled, 1 batch acknowledged, 1 segment pending" in human.output
    assert "pending" in human.output and "records polled" in human.output


def test_status_of_a_missing_journal_names_the_option(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["status", "--journal", str(tmp_path / "absent")],
                                env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert result.exit_code == 2
    assert "no journal at" in result.output and "--journal" in result.output
    assert not (tmp_path / "absent").exists()


@pytest.mark.parametrize(
    ("planted", "named"),
    [
        (("offsets/0", "commits/0", "metadata"), "is a Spark checkpoint, not a journal"),
        (("notes.txt",), "it holds notes.txt, and a journal holds segments"),
    ],
)
def test_status_of_a_directory_that_is_no_journal_says_so(
    tmp_path: Path, planted: tuple[str, ...], named: str
) -> None:
    for name in planted:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("{}")
    result = CliRunner().invoke(app, ["status", "--journal", str(tmp_path)],
                                env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert result.exit_code == 2, result.output
    assert named in " ".join(result.output.split())
    assert "--journal" in result.output


def test_status_of_a_journal_not_yet_written_is_empty(tmp_path: Path) -> None:
    report = status_json("--journal", str(tmp_path))
    assert report["segments"] == [] and report["acknowledged"] == 0


def test_status_reads_a_journal_on_gcs_given_the_store_s_settings(
    tmp_path: Path, gcs_server: GcsServer
) -> None:
    """The suite's GCS emulator takes none of object_store's writes; status, which writes
    nothing, reads a journal there with the settings given as --storage-option."""
    Journal(str(tmp_path)).write(1, to_record_batch(messages()))
    prefix = f"status-{uuid.uuid4().hex}"
    gcs_server.upload(f"{prefix}/{segment_name(1)}", (tmp_path / segment_name(1)).read_bytes())
    settings = [f"--storage-option={key}={value}"
                for key, value in gcs_server.storage_options().items()]

    report = status_json("--journal", gcs_server.url(prefix), *settings)

    assert report["segments"] == [{"seq": 1, "rows": 4, "settled": False}]
    assert report["pending"] == [1] and report["journal"] == gcs_server.url(prefix)
