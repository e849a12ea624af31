"""Fetch delta-spark's jars once: ``python -m kafka_share_eos.deltaspark.prefetch``.

A child process starts a local Spark session set up by
:func:`~kafka_share_eos.deltaspark.with_delta_spark` and writes one Delta table, so Spark's
package resolution downloads the jars into its cache and the JVM proves it can load them. Its
output (Ivy's resolution report, Spark's warnings) goes to a log file: nothing is printed when
all is well, and on failure the reason and the end of the log.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from kafka_share_eos.deltaspark.spark_session import delta_spark_package, with_delta_spark

TIMEOUT_S = 600.0
_TAIL_LINES = 40
_REASONS = ("unresolved dependency", "not found", "Exception", "Error", "error:")


def log_path() -> Path:
    """Where the last fetch's output is kept (``XDG_CACHE_HOME`` honoured)."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "kafka-share-eos" / "delta-spark-prefetch.log"


def _resolve() -> None:
    """In the child: a session with delta-spark's jars, one Delta table written and read."""
    from kafka_share_eos._libs import spark_sql

    builder = (
        spark_sql.SparkSession.builder.master("local[1]")
        .appName("delta-spark-prefetch")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.databricks.delta.snapshotPartitions", "1")
    )
    spark = with_delta_spark(builder).getOrCreate()
    try:
        with tempfile.TemporaryDirectory() as directory:
            spark.range(1).write.format("delta").save(directory)
            assert spark.read.format("delta").load(directory).count() == 1
    finally:
        spark.stop()


def _reason(lines: list[str]) -> str:
    found = [line.strip() for line in lines if any(word in line for word in _REASONS)]
    return found[0] if found else "see the log"


def main() -> int:
    """Fetch the jars; 0 when they load, else 1 with the reason and the log's end on stderr."""
    if sys.argv[1:] == ["--resolve"]:
        _resolve()
        return 0
    package = delta_spark_package()
    log = log_path()
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as out:
        try:
            status = subprocess.run(
                [sys.executable, "-m", "kafka_share_eos.deltaspark.prefetch", "--resolve"],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                timeout=TIMEOUT_S, check=False,
            ).returncode
        except subprocess.TimeoutExpired:
            status = None
    if status == 0:
        return 0
    lines = log.read_text(errors="replace").splitlines()
    why = f"timed out after {TIMEOUT_S:.0f} s" if status is None else _reason(lines)
    print(f"fetching {package} for delta-spark failed: {why}\n(log: {log})", file=sys.stderr)
    print("\n".join(lines[-_TAIL_LINES:]), file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
