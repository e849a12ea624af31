"""Strategies and what they hold, pickled as a Spark Connect client pickles a ``foreachBatch``
strategy (with PySpark's cloudpickle), and run by a copy in a Python process of its own, as the
Connect server's worker runs it.

``python -m helpers.pickled IN OUT`` is that process: it loads the strategy and its batches
from the file IN, applies the batches in order and writes their reports to the file OUT.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

import pyarrow as pa
from pyspark import cloudpickle

from helpers.paths import SHARED
from kafka_share_eos.strategies import BatchReport

T = TypeVar("T")


def copied(thing: T) -> T:
    """A copy of ``thing`` through PySpark's cloudpickle, in this process."""
    copy: T = cloudpickle.loads(cloudpickle.dumps(thing))
    return copy


def apply_elsewhere(
    strategy: Any, batches: Sequence[tuple[pa.Table, int]], timeout: float = 120
) -> list[BatchReport]:
    """Pickle ``strategy``, unpickle it in a new Python process and apply ``batches`` there,
    in order; their reports. Fails with the process's output unless it exits 0."""
    with tempfile.TemporaryDirectory(prefix="kse-pickled-") as folder:
        given, reports = Path(folder) / "in", Path(folder) / "out"
        given.write_bytes(cloudpickle.dumps((strategy, list(batches))))
        path = os.pathsep.join(filter(None, [str(SHARED), os.environ.get("PYTHONPATH")]))
        result = subprocess.run(
            [sys.executable, "-m", "helpers.pickled", str(given), str(reports)],
            capture_output=True, text=True, timeout=timeout, check=False,
            env={**os.environ, "PYTHONPATH": path},
        )
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
        applied: list[BatchReport] = pickle.loads(reports.read_bytes())
        return applied


def _main(given: str, reports: str) -> None:
    strategy, batches = pickle.loads(Path(given).read_bytes())
    applied = [strategy.apply(table, batch_id) for table, batch_id in batches]
    close = getattr(strategy, "close", None)
    if close is not None:
        close()
    Path(reports).write_bytes(pickle.dumps(applied))


if __name__ == "__main__":
    _main(*sys.argv[1:])
