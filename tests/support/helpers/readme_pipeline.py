"""The README's pipeline with ``consumers=4`` and ``acknowledge=afterJournal``, as a process.

Usage: ``python -m helpers.readme_pipeline BOOTSTRAP TOPIC GROUP POSTGRES_URL WORKDIR [MASTER
[HOLD_POINT]]``. Spark runs with four cores, so the four slots of a micro-batch poll in four
Python workers at once: locally, or on the standalone cluster at ``MASTER``, whose executors
then hold at ``HOLD_POINT`` until ``WORKDIR/gate`` releases them
(:class:`helpers.applications.HoldGate`). The
query drains the group (``availableNow``) and exits; the options after ``acknowledge`` only fit
the test broker's short lock and session timeout and make batches small enough to be killed
between.
"""

from __future__ import annotations

import sys
from pathlib import Path

import sqlalchemy as sa

import kafka_share_eos
from kafka_share_eos import IdempotentUpsertSink
from kafka_share_eos.faults import HOLD_AT_ENV, HOLD_GATE_ENV
from kafka_share_eos.proving_ground.launchers.spark import (
    local_spark_session,
    standalone_spark_session,
)
from kafka_share_eos.proving_ground.streams import share_stream, source_options

LOCK_MS = 4000
SESSION_TIMEOUT_MS = 3000


def main(bootstrap: str, topic: str, group: str, postgres_url: str, workdir: str,
         master: str | None = None, hold_point: str | None = None) -> None:
    if master is None:
        spark = local_spark_session("readme-pipeline", cores=4, short_lived=True)
    else:
        hold = ({} if hold_point is None
                else {HOLD_AT_ENV: hold_point, HOLD_GATE_ENV: str(Path(workdir, "gate"))})
        spark = standalone_spark_session(master, "readme-pipeline", cores=4, executor_env=hold)
    kafka_share_eos.register(spark)
    orders = share_stream(spark, source_options(
        bootstrap, group, topic, Path(workdir, "journal"),
        consumers="4",
        acknowledge="afterJournal",
        lockDurationMs=str(LOCK_MS),
        sessionTimeoutMs=str(SESSION_TIMEOUT_MS),
        maxRecordsPerTrigger="200",
        availableNowIdleMs="3000",
    ))
    sink = IdempotentUpsertSink.sql(postgres_url, "orders", create_table=True)
    (
        orders.writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(Path(workdir, "checkpoint")))
        .trigger(availableNow=True)
        .start()
        .awaitTermination()
    )
    spark.stop()


def orders(engine: sa.Engine) -> list[tuple[int, int, bytes]]:
    """The ``(partition, offset, value)`` rows of the pipeline's table, sorted."""
    with engine.connect() as conn:
        if not sa.inspect(conn).has_table("orders"):
            return []
        rows = conn.execute(sa.text('SELECT "partition", "offset", value FROM orders')).all()
    return sorted((r[0], r[1], bytes(r[2])) for r in rows)


if __name__ == "__main__":
    main(*sys.argv[1:8])
