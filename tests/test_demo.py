"""The README's first command: the demo runs on embedded defaults and verifies its own sinks."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import sqlalchemy as sa
from helpers.delta import read_delta
from helpers.scripts import run_python

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]


def test_demo_applies_every_order_exactly_once_despite_a_crash(tmp_path: Path) -> None:
    work = tmp_path / "demo"
    result = run_python(
        "-m", "kafka_share_eos.cli.main", "demo", "--orders", "600", "--per-trigger", "200",
        "--workdir", str(work),
    )
    assert "simulated crash" in result.stdout + result.stderr
    assert result.stdout.count("verified") == 2

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
    assert "new orders written" in result.stdout  # one progress line per batch

    engine = sa.create_engine(postgres_url)
    with engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT order_id FROM orders ORDER BY order_id")).all()
    engine.dispose()
    assert [row[0] for row in rows] == list(range(300))
