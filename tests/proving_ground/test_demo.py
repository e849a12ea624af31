"""The README's first command: the demo runs on embedded defaults and verifies its own sinks."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa
from helpers.delta import read_delta
from helpers.quiet import LINE_BUDGET, quiet_run_log
from helpers.scripts import run_python

from kafka_share_eos.proving_ground.launchers.pyspark_client import client_environment
from kafka_share_eos.proving_ground.launchers.spark_connect import SparkConnectServer

REPO = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]


def test_demo_applies_every_order_exactly_once_despite_a_crash(tmp_path: Path) -> None:
    work = tmp_path / "demo"
    result = run_python(
        "-m", "kafka_share_eos.cli.main", "demo", "--orders", "600", "--per-trigger", "200",
        "--workdir", str(work),
    )
    assert result.stdout.count("verified") == 2
    log = quiet_run_log(result.stdout + result.stderr, crashes=1)
    assert "simulated crash in batch 1 after the sink: restarting" in result.stdout
    counts = [[int(cell) for cell in line.split("│")[2:8]]
              for line in result.stdout.splitlines() if line.startswith(("│ sql", "│ delta"))]
    assert len(counts) == 2
    for rows, seen, new, replayed, redelivered, absorbed in counts:
        # Each record seen is new, replayed or redelivered; every repeat absorbed.
        assert (rows, new) == (600, 600)
        assert seen == new + replayed + redelivered
        assert absorbed == replayed + redelivered
        assert replayed > 0  # the crashed batch ran again
    # docs/getting-started.md shows this run's output: its headers and caption as printed.
    documented = (REPO / "docs" / "getting-started.md").read_text()
    for line in result.stdout.splitlines():
        if line.startswith(("┃ sink", "orders ━")) or "seen = new" in line:
            assert re.sub(r"\d+", "N", line.strip()) in re.sub(r"\d+", "N", documented)
    # What used to flood the terminal is in the log: the crash's Java and Python stack traces,
    # and librdkafka's warning about its share consumer.
    assert "ERROR MicroBatchExecution" in log and "SimulatedCrash" in log
    assert 'The share consumer is in "Preview"' in log

    with sqlite3.connect(work / "orders.db") as db:
        rows = db.execute("SELECT order_id, COUNT(*) FROM orders GROUP BY order_id").fetchall()
    assert sorted(rows) == [(order_id, 1) for order_id in range(600)]
    delta = read_delta(str(work / "orders-delta"), "SELECT order_id FROM t")
    assert sorted(delta.column("order_id").to_pylist()) == list(range(600))


@pytest.mark.postgres
def test_demo_writes_a_supplied_postgres_database(postgres_url: str, tmp_path: Path) -> None:
    result = run_python(
        "-m", "kafka_share_eos.cli.main", "demo", "--orders", "300", "--per-trigger", "100",
        "--postgres-url", postgres_url, "--workdir", str(tmp_path / "demo"),
    )
    assert result.stdout.count("verified") == 2
    quiet_run_log(result.stdout + result.stderr, crashes=1)

    engine = sa.create_engine(postgres_url)
    with engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT order_id FROM orders ORDER BY order_id")).all()
    engine.dispose()
    assert [row[0] for row in rows] == list(range(300))


def test_a_failing_demo_prints_its_cause_and_where_the_log_is(tmp_path: Path) -> None:
    # Nothing listens on port 1: the SQL sink is refused when it is built, before any record.
    result = subprocess.run(
        [sys.executable, "-m", "kafka_share_eos.cli.main", "demo", "--orders", "60",
         "--per-trigger", "20", "--sql-url", "postgresql+psycopg://kse@127.0.0.1:1/nowhere",
         "--workdir", str(tmp_path / "demo")],
        capture_output=True, text=True, timeout=280, check=False,
    )

    assert result.returncode == 1, result.stdout + result.stderr
    assert "failed: DatabaseUnreachableError" in result.stderr
    assert "no record was read or written" in " ".join(result.stderr.split())
    assert "Connection refused" in result.stderr
    assert str(tmp_path / "demo" / "spark.log") in result.stderr
    log = quiet_run_log(result.stdout + result.stderr)
    assert "Traceback" in log and "Connection refused" in log  # the whole error is kept there


@pytest.mark.connect
def test_demo_runs_its_pipeline_in_a_connect_session_and_never_prints_its_token(
    spark_connect_server: SparkConnectServer, tmp_path: Path
) -> None:
    work = tmp_path / "demo"
    # A server without a token takes a client's; the client sends it to localhost only.
    token = "demo-secret-51c0e2"
    url = f"sc://localhost:{spark_connect_server.port}/;token={token}"
    result = run_python(
        "-m", "kafka_share_eos.cli.main", "demo", "--orders", "300", "--per-trigger", "100",
        "--workdir", str(work), "--remote", url, env=client_environment(),
    )
    output = result.stdout + result.stderr
    assert result.stdout.count("verified") == 2
    assert f"Spark Connect session at sc://localhost:{spark_connect_server.port} " in output
    assert "simulated crash in batch 1 after the sink: restarting" in result.stdout
    # The Connect server keeps Spark's logs; the terminal stays as quiet as with a local Spark.
    assert len(output.splitlines()) < LINE_BUDGET and "Traceback" not in output, output
    assert token not in output
    assert not [path for path in work.rglob("*")
                if path.is_file() and token.encode() in path.read_bytes()]

    with sqlite3.connect(work / "orders.db") as db:
        rows = db.execute("SELECT order_id, COUNT(*) FROM orders GROUP BY order_id").fetchall()
    assert sorted(rows) == [(order_id, 1) for order_id in range(300)]
    delta = read_delta(str(work / "orders-delta"), "SELECT order_id FROM t")
    assert sorted(delta.column("order_id").to_pylist()) == list(range(300))


def test_the_demo_shows_a_connect_url_without_its_parameters() -> None:
    from kafka_share_eos.proving_ground.demo import shown_url

    assert shown_url("sc://spark.internal:443/;use_ssl=true;token=abc;user_id=me") == (
        "sc://spark.internal:443")
    assert shown_url("sc://localhost:15002;token=abc") == "sc://localhost:15002"
    assert shown_url("local[2]") == "the given URL"
