"""The warm-up process of the Spark class archive
(:mod:`kafka_share_eos.proving_ground.launchers.jvm`):
``python -m kafka_share_eos.proving_ground.launchers.jvm_warm_up ARCHIVE`` runs a small
``kafka-share`` query in a JVM that writes the classes it loaded to ``ARCHIVE`` as it exits."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from confluent_kafka import Producer

import kafka_share_eos
from kafka_share_eos.proving_ground.broker import EmbeddedBroker
from kafka_share_eos.proving_ground.launchers.jvm import WARM_UP_TIMEOUT_S
from kafka_share_eos.proving_ground.launchers.spark import spark_session
from kafka_share_eos.proving_ground.streams import share_stream, source_options


def warm_up(partial: Path) -> None:
    """Load what a pipeline loads: a ``kafka-share`` stream into ``foreachBatch``."""
    spark = spark_session("kafka-share-eos-warm-up", 1, [f"-XX:ArchiveClassesAtExit={partial}"])
    kafka_share_eos.register(spark)
    with EmbeddedBroker(["warm-up:1"]) as broker, tempfile.TemporaryDirectory() as work:
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
        for i in range(10):
            producer.produce("warm-up", key=b"%d" % i, value=b"{}")
        producer.flush(30)
        options = source_options(broker.bootstrap_servers, "warm-up", "warm-up",
                                 f"{work}/journal", availableNowIdleMs="500")
        query = (
            share_stream(spark, options)
            .writeStream.foreachBatch(lambda batch, _: batch.toArrow())
            .trigger(availableNow=True)
            .option("checkpointLocation", f"{work}/checkpoint")
            .start()
        )
        query.awaitTermination()
    gateway = spark.sparkContext._gateway.proc  # type: ignore[union-attr]
    spark.stop()
    # The JVM writes the archive as it exits, which it does when its stdin closes: wait for it,
    # or the caller could take a half-written archive.
    gateway.stdin.close()
    gateway.wait(WARM_UP_TIMEOUT_S)


if __name__ == "__main__":
    warm_up(Path(sys.argv[1]))
