"""The README's pipeline with ``consumers=4`` and ``acknowledge=afterJournal``, as a process.

Usage: ``python -m helpers.readme_pipeline BOOTSTRAP TOPIC GROUP POSTGRES_URL WORKDIR``. Spark runs
with four cores, so the four slots of a micro-batch poll in four Python workers at once. The
query drains the group (``availableNow``) and exits; the options after ``acknowledge`` only fit
the test broker's short lock and session timeout and make batches small enough to be killed
between.
"""

from __future__ import annotations

import sys
from pathlib import Path

import kafka_share_eos
from kafka_share_eos import IdempotentUpsertSink
from kafka_share_eos.testing.spark import local_spark_session

LOCK_MS = 4000
SESSION_TIMEOUT_MS = 3000


def main(bootstrap: str, topic: str, group: str, postgres_url: str, workdir: str) -> None:
    spark = local_spark_session("readme-pipeline", cores=4, short_lived=True)
    kafka_share_eos.register(spark)
    orders = (
        spark.readStream.format("kafka-share")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("kafka.share.group.id", group)
        .option("subscribe", topic)
        .option("journalPath", str(Path(workdir, "journal")))
        .option("consumers", "4")
        .option("acknowledge", "afterJournal")
        .option("lockDurationMs", str(LOCK_MS))
        .option("sessionTimeoutMs", str(SESSION_TIMEOUT_MS))
        .option("maxRecordsPerTrigger", "200")
        .option("availableNowIdleMs", "3000")
        .load()
    )
    sink = IdempotentUpsertSink.sql(postgres_url, "orders", create_table=True)
    (
        orders.writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(Path(workdir, "checkpoint")))
        .trigger(availableNow=True)
        .start()
        .awaitTermination()
    )
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:6])
