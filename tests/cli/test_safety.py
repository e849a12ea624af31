"""The command line is safe to point at anything: status only reads (it creates no database,
table or file), a damaged journal segment is named, doctor tells a directory that is no Spark
checkpoint, and a user's mistake ends with a message and exit code 2 (usage) or 1 (failure),
never a traceback or an aborted process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
import sqlalchemy as sa
from helpers.batches import source_rows

from kafka_share_eos import IdempotentUpsertSink, JournalError, SqlDeadLetters
from kafka_share_eos.journal.segments import segment_name
from kafka_share_eos.pipeline_status import journal_status

ROWS = source_rows(topic="t", partition=0, offset=[0])


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "kafka_share_eos.cli.main", *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=cwd)
    assert "Traceback" not in done.stderr, done.stderr
    return done


def arrow_file(path: Path, table: pa.Table) -> bytes:
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    return path.read_bytes()


@pytest.fixture
def journal(tmp_path: Path) -> Path:
    (tmp_path / "journal").mkdir()
    return tmp_path / "journal"


def test_status_creates_no_sqlite_database(journal: Path, tmp_path: Path) -> None:
    missing = tmp_path / "letters.db"
    done = cli("status", "--journal", str(journal), "--dead-letters", f"sqlite:///{missing}")
    assert done.returncode == 2 and "no SQLite database" in done.stderr
    assert not missing.exists()


def test_status_creates_no_table_and_reads_a_named_one(journal: Path, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'app.db'}"
    IdempotentUpsertSink.sql(url, "orders", create_table=True).apply(ROWS, 0)
    done = cli("status", "--journal", str(journal), "--dead-letters", url)
    assert done.returncode == 2 and "no dead-letter table" in done.stderr
    assert sa.inspect(sa.create_engine(url)).get_table_names() == ["orders"]
    SqlDeadLetters(url, "poison")
    named = cli("status", "--journal", str(journal), "--dead-letters", url,
                "--dead-letter-table", "poison", "--json")
    assert named.returncode == 0 and '"dead_letters": 0' in named.stdout


@pytest.mark.parametrize("damage", ["empty", "truncated", "foreign schema"])
def test_a_damaged_segment_is_named_never_skipped(journal: Path, damage: str) -> None:
    segment = journal / segment_name(0)
    if damage == "empty":
        segment.write_bytes(b"")
    elif damage == "truncated":
        whole = arrow_file(segment, pa.table({"x": list(range(1000))}))
        segment.write_bytes(whole[: len(whole) // 2])
    else:
        arrow_file(segment, pa.table({"x": [1]}))
    with pytest.raises(JournalError, match=segment.name):
        journal_status(str(journal))
    done = cli("status", "--journal", str(journal))
    assert done.returncode == 1 and segment.name in done.stderr


def test_doctor_tells_a_directory_that_is_no_checkpoint(journal: Path) -> None:
    (journal / segment_name(0)).write_bytes(b"")
    done = cli("doctor", "--checkpoint", str(journal))
    assert done.returncode == 1 and "not a Spark checkpoint" in done.stdout


@pytest.mark.parametrize(("args", "named"), [
    (["broker", "--topic", "jobs:99999999999999999999"], "--topic"),
    (["broker", "--lock-ms", str(2**31)], "--lock-ms"),
    (["status", "--journal", "/nonexistent/journal"], "--journal /nonexistent/journal"),
    (["verify", "--runs", "0"], "--runs"),
    (["no-such-command"], "no-such-command"),
], ids=["partitions", "lock-ms", "journal", "runs", "command"])
def test_a_usage_error_exits_2_with_a_message(args: list[str], named: str) -> None:
    done = cli(*args)
    assert done.returncode == 2 and named in done.stderr
