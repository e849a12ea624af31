"""``kafka-share-eos doctor`` on the checkpoint a kill during Spark's first offset-log write
leaves, and a query restarted after its fix applying every record once."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import sqlalchemy as sa
from helpers import produce
from helpers.streaming import run_available_now, share_stream
from typer.testing import CliRunner

from kafka_share_eos.cli.main import app
from kafka_share_eos.journal import Journal
from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic
from kafka_share_eos.source.batch_planner import BatchPlanner
from kafka_share_eos.source.options import SourceOptions
from kafka_share_eos.strategies import IdempotentUpsertSink

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = pytest.mark.timeout(240)


def interrupted_first_write(checkpoint: Path) -> list[str]:
    """The checkpoint Spark 4.3 leaves when killed while writing offsets/0 on a local disk:
    the query's metadata, and the temporary entry with Hadoop's checksum beside it."""
    (checkpoint / "offsets").mkdir(parents=True)
    (checkpoint / "metadata").write_text(json.dumps({"id": str(uuid.uuid4())}) + "\n")
    temp = f".0.{uuid.uuid4()}.tmp"
    leftovers = [f"offsets/{temp}", f"offsets/.{temp}.crc"]
    (checkpoint / leftovers[0]).write_text('v1\n{"batchWatermarkMs":0,"batchTimestampMs":1')
    (checkpoint / leftovers[1]).write_bytes(b"crc\x00\x00\x02\x00")
    return leftovers


def files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def doctor(checkpoint: Path, *args: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(app, ["doctor", "--checkpoint", str(checkpoint), *args, "--json"])
    report: dict[str, Any] = json.loads(result.output)
    return result.exit_code, report


def test_the_leftover_of_an_interrupted_first_write_is_explained(tmp_path: Path) -> None:
    leftovers = interrupted_first_write(tmp_path)
    before = files(tmp_path)
    result = CliRunner().invoke(app, ["doctor", "--checkpoint", str(tmp_path)])
    assert result.exit_code == 1
    assert "cannot restart" in result.output
    assert all(f"found {path}" in result.output for path in leftovers)
    for words in ("killed while Spark wrote the first entry", "batch 0 was never logged",
                  "STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY", "journal", "--fix"):
        assert words in result.output
    assert files(tmp_path) == before


def test_fix_removes_exactly_the_leftovers(tmp_path: Path) -> None:
    leftovers = interrupted_first_write(tmp_path)
    (tmp_path / "sources" / "0").mkdir(parents=True)
    (tmp_path / "sources" / "0" / "0").write_text("v1\n")
    before = files(tmp_path)

    code, report = doctor(tmp_path, "--fix")
    assert code == 0 and report["healthy"]
    assert sorted(report["removed"]) == sorted(leftovers)
    assert files(tmp_path) == before - set(leftovers)
    code, again = doctor(tmp_path, "--fix")
    assert (code, again["healthy"], again["removed"]) == (0, True, [])
    assert files(tmp_path) == before - set(leftovers)


def test_a_checkpoint_with_logged_batches_is_healthy_and_left_alone(tmp_path: Path) -> None:
    for log in ("offsets", "commits"):
        (tmp_path / log).mkdir()
        (tmp_path / log / "0").write_text("v1\n")
        (tmp_path / log / ".0.crc").write_bytes(b"crc")
    # A later interrupted write: Spark reads the log from its last batch and ignores it.
    (tmp_path / "offsets" / f".1.{uuid.uuid4()}.tmp").write_text("v1\n")
    before = files(tmp_path)
    code, report = doctor(tmp_path, "--fix")
    assert (code, report["healthy"], report["logged_batches"]) == (0, True, 1)
    assert report["removed"] == [] and files(tmp_path) == before


def test_a_fresh_checkpoint_is_healthy(tmp_path: Path) -> None:
    assert doctor(tmp_path)[0] == 0


def test_files_it_does_not_recognise_are_reported_and_kept(tmp_path: Path) -> None:
    leftovers = interrupted_first_write(tmp_path)
    (tmp_path / "commits").mkdir()
    (tmp_path / "commits" / "0").write_text("v1\n")
    before = files(tmp_path)
    code, report = doctor(tmp_path, "--fix")
    assert code == 1 and not report["healthy"]
    assert report["unexpected"] == ["commits/0"] and sorted(report["leftovers"]) == sorted(
        leftovers)
    assert report["removed"] == [] and files(tmp_path) == before


def test_a_missing_checkpoint_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["doctor", "--checkpoint", str(tmp_path / "none")])
    assert result.exit_code == 2 and "no checkpoint" in result.output


@pytest.mark.spark
def test_after_the_fix_the_query_applies_every_record_once(
    spark: SparkSession, share_topic: ShareTopic, tmp_path: Path
) -> None:
    """A first run journaled and ACCEPTed a batch (afterJournal), then was killed while Spark
    wrote offsets/0: those records are only in the journal now. Spark with its default checks
    refuses the checkpoint; after the fix the query applies every record exactly once."""
    records = 60
    produce(share_topic.bootstrap_servers, share_topic.topic, (b"%d" % i for i in range(records)),
            partitions=share_topic.partitions)
    journal_path = str(tmp_path / "journal")
    options = {
        "kafka.bootstrap.servers": share_topic.bootstrap_servers,
        "kafka.share.group.id": share_topic.group_id, "subscribe": share_topic.topic,
        "journalPath": journal_path, "maxRecordsPerTrigger": "20", "pollTimeoutMs": "3000",
        "acknowledge": "afterJournal",
    }
    journal = Journal(journal_path)
    planner = BatchPlanner(SourceOptions.parse(options), journal)
    try:
        assert planner.latest(0, 20) >= 1
    finally:
        planner.close()
    accepted = {
        (r["partition"], r["offset"]) for seq in journal.sequences()
        for r in journal.read(seq).to_pylist()
    }
    assert accepted
    checkpoint = tmp_path / "checkpoint"
    interrupted_first_write(checkpoint)

    # The default check, which the test session turns off. Set on the session itself: a
    # newSession() does not find a data source its parent session registered.
    check = "spark.sql.streaming.verifyCheckpointDirectoryEmptyOnStart"
    stream = share_stream(spark, share_topic, tmp_path / "journal", acknowledge="afterJournal",
                          maxRecordsPerTrigger="20", availableNowIdleMs="2000")
    target = f"sqlite:///{tmp_path / 'target.db'}"
    sink = IdempotentUpsertSink.sql(target, "records", create_table=True)
    relaxed = spark.conf.get(check)
    spark.conf.set(check, "true")
    try:
        with pytest.raises(Exception, match="STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY"):
            run_available_now(stream, checkpoint, sink)
    finally:
        spark.conf.set(check, relaxed)
    assert sink.totals.batches == 0

    assert doctor(checkpoint, "--fix")[0] == 0
    run_available_now(stream, checkpoint, sink)
    engine = sa.create_engine(target)
    with engine.connect() as conn:
        applied = conn.exec_driver_sql('SELECT "partition", "offset" FROM records').all()
    engine.dispose()
    assert len(applied) == records == len(set(applied))
    assert accepted <= set(applied)
    assert sink.totals.rows_written == records
    sink.close()
