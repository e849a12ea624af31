"""Keep the latest reading of every sensor in an Apache Iceberg table, exactly once.

    python examples/iceberg_upserts.py                  # embedded broker, catalog in a temp dir
    python examples/iceberg_upserts.py --bootstrap-servers broker:9092 --topic sensor-readings \\
        --group sensors-eos --workdir /data/sensors     # your cluster

Each record is a reading "<sensor>,<sequence number>,<celsius>". The sink upserts on the sensor
into an Iceberg table of pyiceberg's SQL catalog on a SQLite file (no server to run), and
replaces a row only with a strictly higher sequence number, so redeliveries, replayed batches
and readings arriving out of order never bring an older reading back. Each snapshot it commits
records the batch in its summary, which is how a replayed batch is known and skipped.
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path

from pyiceberg.catalog import load_catalog

import kafka_share_eos
from kafka_share_eos import EmbeddedBroker, IdempotentUpsertSink
from kafka_share_eos.proving_ground.console import RunConsole

TABLE = "plant.sensors"


def reading(sensor: int, sequence: int) -> str:
    """The sample reading number ``sequence`` of ``sensor``."""
    return f"{sensor},{sequence},{(sensor * 7 + sequence * 3) % 40}.5"


@contextlib.contextmanager
def broker_with_readings(topic: str, sensors: int, per_sensor: int) -> Iterator[str]:
    """An embedded broker holding ``per_sensor`` readings of each of ``sensors`` sensors."""
    from confluent_kafka import Producer

    with EmbeddedBroker([f"{topic}:4"]) as broker:
        producer = Producer(broker.client_config())
        for sequence in range(1, per_sensor + 1):
            for sensor in range(sensors):
                producer.produce(topic, key=b"%d" % sensor, value=reading(sensor, sequence))
        producer.flush(30)
        yield broker.bootstrap_servers


def lake(workdir: Path) -> dict[str, str]:
    """pyiceberg's SQL catalog on a SQLite file, its warehouse beside it."""
    (workdir / "warehouse").mkdir(parents=True, exist_ok=True)
    return {"type": "sql", "uri": f"sqlite:///{workdir / 'catalog.db'}",
            "warehouse": (workdir / "warehouse").as_uri()}


def summary(catalog: dict[str, str]) -> None:
    """What any Iceberg reader sees (here pyiceberg's), and the last batch committed."""
    table = load_catalog("default", **catalog).load_table(TABLE)
    rows = table.scan(selected_fields=("sensor", "sequence")).to_arrow()
    print(f"{TABLE} holds {rows.num_rows} sensors, latest sequence numbers "
          f"{sorted(set(rows['sequence'].to_pylist()))}")
    snapshot = table.current_snapshot()
    if snapshot is not None and snapshot.summary is not None:
        print(f"last snapshot: batch {snapshot.summary['kafka-share-eos.batch']} of "
              f"{snapshot.summary['kafka-share-eos.application']}")


def run(console: RunConsole, bootstrap_servers: str, topic: str, group: str,
        workdir: Path) -> None:
    """Drain the topic into the table and print what the sink did."""
    spark = console.spark("iceberg-upserts")
    kafka_share_eos.register(spark)
    fields = "split(CAST(value AS STRING), ',')"
    source = {"kafka.bootstrap.servers": bootstrap_servers, "kafka.share.group.id": group,
              "subscribe": topic, "journalPath": str(workdir / "journal")}
    readings = (
        spark.readStream.format("kafka-share").options(**source).load()
        .selectExpr(f"CAST({fields}[0] AS INT) AS sensor",
                    f"CAST({fields}[1] AS BIGINT) AS sequence",
                    f"CAST({fields}[2] AS DOUBLE) AS celsius")
    )
    catalog = lake(workdir)
    sink = IdempotentUpsertSink.iceberg(TABLE, catalog=catalog, key_columns=["sensor"],
                                        version_column="sequence", create_table=True)
    # Older and repeated readings are absorbed, not written: how many is not known up front.
    with console.tracking(sink, None, "readings written") as pipeline:
        writer = readings.writeStream.foreachBatch(pipeline).trigger(availableNow=True)
        writer.option("checkpointLocation", str(workdir / "checkpoint")).start().awaitTermination()
    done = sink.totals
    print(f"{done.rows_in} readings in {done.batches} batches: {done.rows_written} written, "
          f"{done.duplicates_in_batch + done.already_applied} older or repeated absorbed")
    summary(catalog)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap-servers", help="a Kafka 4.2+ cluster (default: embedded)")
    parser.add_argument("--topic", default="sensor-readings")
    parser.add_argument("--group", default="sensors-eos", help="the share group to consume as")
    parser.add_argument("--sensors", type=int, default=200, help="sample sensors (embedded)")
    parser.add_argument("--readings", type=int, default=5, help="sample readings per sensor")
    parser.add_argument("--workdir", type=Path,
                        help="journal, checkpoint, catalog and warehouse (default: temp)")
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="iceberg-upserts-"))
    # Spark's, the JVM's and the broker clients' logs go to a file; the terminal gets stages.
    with RunConsole("iceberg-upserts", workdir / "spark.log") as console:
        if args.bootstrap_servers:
            run(console, args.bootstrap_servers, args.topic, args.group, workdir)
            return
        with broker_with_readings(args.topic, args.sensors, args.readings) as bootstrap:
            console.stage(f"embedded broker at {bootstrap}: {args.readings} readings of each of "
                          f"{args.sensors} sensors")
            run(console, bootstrap, args.topic, args.group, workdir)


if __name__ == "__main__":
    main()
