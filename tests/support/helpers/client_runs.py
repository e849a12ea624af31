"""Running the README's pipeline from a Spark Connect client process
(:mod:`helpers.connect_client`) and reading what it wrote."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from helpers.paths import SHARED
from kafka_share_eos.proving_ground.launchers.pyspark_client import client_environment

if TYPE_CHECKING:
    from kafka_share_eos.proving_ground.broker import ShareTopic


def run_client(url: str, topic: ShareTopic, workdir: Path,
               python: str | Path = sys.executable) -> dict[str, Any]:
    """Run :mod:`helpers.connect_client` with ``python`` in a process of its own, with this
    checkout's toolkit; the JSON line it printed."""
    result = subprocess.run(
        [str(python), "-m", "helpers.connect_client", url, topic.bootstrap_servers, topic.topic,
         topic.group_id, str(workdir)],
        capture_output=True, text=True, timeout=240, check=False, cwd=SHARED,
        env=client_environment(),
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return dict(json.loads(result.stdout.strip().splitlines()[-1]))


def table_offsets(workdir: Path) -> list[tuple[int, int]]:
    """The ``(partition, offset)`` rows the client's pipeline wrote, sorted, repeats kept."""
    engine = sa.create_engine(f"sqlite:///{workdir / 'orders.db'}")
    with engine.connect() as conn:
        rows = conn.execute(sa.text('SELECT "partition", "offset" FROM orders')).all()
    engine.dispose()
    return sorted((row[0], row[1]) for row in rows)
