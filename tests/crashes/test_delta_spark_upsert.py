"""kill -9 of a pipeline merging with delta-spark, before a batch's MERGE and after its commit:
restarted, it applies every record once.

The pipeline runs in a process group of its own (Python driver and Spark's JVM), killed as a
whole at the crash point. It records a batch as done only after the sink returned, as Spark's
commit log does, so the restart runs the killed batch again: after the MERGE's commit that
replay is skipped by Delta's application transaction.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from deltalake import DeltaTable

from kafka_share_eos import faults

pytestmark = [pytest.mark.delta_spark, pytest.mark.full, pytest.mark.spark,
              pytest.mark.timeout(600)]

BATCHES = 3

PIPELINE = r"""
import os
import sys
from pathlib import Path

import pyarrow as pa

from kafka_share_eos import IdempotentUpsertSink, faults
from kafka_share_eos.proving_ground.launchers.spark import local_spark_session

# A crash kills the whole group: this process and Spark's JVM.
os.environ[faults.CRASH_PGID_ENV] = str(os.getpgrp())

table, done_file, batches = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
spark = local_spark_session("delta-spark-crash", cores=1, short_lived=True, delta_spark=True)
sink = IdempotentUpsertSink.delta(table, engine="spark", app_id="crash-test")
done = {int(line) for line in done_file.read_text().split()} if done_file.exists() else set()
for batch_id in range(batches):
    if batch_id in done:
        continue
    # Each batch holds two records of the one before: redeliveries.
    offsets = list(range(batch_id * 4, batch_id * 4 + 6))
    rows = pa.table({"topic": ["t"] * 6, "partition": pa.array([0] * 6, pa.int32()),
                     "offset": pa.array(offsets, pa.int64())})
    sink.apply_dataframe(spark.createDataFrame(rows), batch_id)
    with done_file.open("a") as out:
        out.write(f"{batch_id}\n")
spark.stop()
"""


def run_pipeline(tmp_path: Path, crash_at: str | None) -> int:
    script = tmp_path / "pipeline.py"
    script.write_text(PIPELINE)
    env = {k: v for k, v in os.environ.items() if k != faults.CRASH_AT_ENV}
    if crash_at:
        env[faults.CRASH_AT_ENV] = crash_at
    process = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path / "table"), str(tmp_path / "done"),
         str(BATCHES)],
        env=env, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    try:
        output, _ = process.communicate(timeout=280)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode in (0, -signal.SIGKILL), output.decode()[-3000:]
    return process.returncode


@pytest.mark.parametrize("point", [faults.SINK_MID_WRITE, faults.STRATEGY_AFTER_WRITE])
def test_killed_merging_and_restarted_applies_every_record_once(
    point: str, tmp_path: Path
) -> None:
    # The second batch's hit: after the first batch committed.
    assert run_pipeline(tmp_path, faults.crash_spec(point, 2)) == -signal.SIGKILL
    assert run_pipeline(tmp_path, None) == 0
    stored = DeltaTable(str(tmp_path / "table")).to_pyarrow_table(columns=["offset"])
    counts = Counter(stored["offset"].to_pylist())
    assert counts == Counter(range(BATCHES * 4 + 2))
    assert DeltaTable(str(tmp_path / "table")).transaction_version("crash-test") == BATCHES - 1
