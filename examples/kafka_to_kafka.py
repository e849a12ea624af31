"""Read orders from a share group, enrich them, write them to another topic exactly once.

    python examples/kafka_to_kafka.py                 # embedded broker, 1000 sample orders
    python examples/kafka_to_kafka.py --bootstrap-servers broker:9092 --topic orders \\
        --group enrich --output orders-enriched      # your Apache Kafka 4.2+ cluster

The output topic must exist (the sink refuses one that does not, before reading any order).

Each order {"order_id", "amount"} gets a tax and a total and goes to the output topic, keyed by
order, with its source record in the headers. Each micro-batch is one producer transaction with
a marker of the batch, so a replayed batch writes nothing again. Read the output with
isolation.level=read_committed. The embedded broker runs the transactions but does not isolate
them; the exactly-once guarantee is Apache Kafka's (docs/kafka-topic.md).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa

import kafka_share_eos
from kafka_share_eos import EmbeddedBroker, KafkaTopicSink
from kafka_share_eos.proving_ground.console import RunConsole

TAX = 0.2


@contextlib.contextmanager
def broker_with_sample_orders(topic: str, output: str, count: int) -> Iterator[str]:
    """An embedded broker holding ``count`` sample orders, and the output topic."""
    from confluent_kafka import Producer

    with EmbeddedBroker([f"{topic}:3", f"{output}:3"]) as broker:
        producer = Producer(broker.client_config())
        for order_id in range(count):
            order = {"order_id": order_id, "amount": order_id % 90 + 10}
            producer.produce(topic, key=b"%d" % order_id, value=json.dumps(order).encode())
        producer.flush(30)
        yield broker.bootstrap_servers


def enrich(rows: pa.Table) -> pa.Table:
    """The source's rows with the enriched order as the value (the identity columns stay)."""
    orders = [json.loads(value) for value in rows["value"].to_pylist()]
    enriched = [json.dumps({**o, "tax": round(o["amount"] * TAX, 2),
                            "total": round(o["amount"] * (1 + TAX), 2)}).encode()
                for o in orders]
    return rows.set_column(rows.schema.get_field_index("value"), "value",
                           pa.array(enriched, pa.binary()))


def committed_keys(bootstrap_servers: str, topic: str) -> list[bytes | None]:
    """The keys of every record of ``topic`` a read_committed consumer sees, up to its end."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap_servers, "group.id": "count-output",
                         "isolation.level": "read_committed", "enable.partition.eof": True})
    partitions = consumer.list_topics(topic, 30).topics[topic].partitions
    consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
    keys, ended = [], 0
    while ended < len(partitions) and (message := consumer.poll(30)) is not None:
        if message.error() is None:
            keys.append(message.key())
        elif message.error().code() == KafkaError._PARTITION_EOF:
            ended += 1
    consumer.close()
    return keys


def run(console: RunConsole, args: argparse.Namespace, bootstrap_servers: str,
        workdir: Path) -> None:
    """Drain the orders into the output topic; print what went where."""
    sink = KafkaTopicSink(args.output, {"bootstrap.servers": bootstrap_servers},
                          transform=enrich)
    spark = console.spark("kafka-to-kafka")
    kafka_share_eos.register(spark)
    orders = (
        spark.readStream.format("kafka-share")
        .option("kafka.bootstrap.servers", bootstrap_servers)
        .option("kafka.share.group.id", args.group)
        .option("subscribe", args.topic)
        .option("journalPath", str(workdir / "journal"))
        .load()
    )
    total = args.orders if args.bootstrap_servers is None else None
    with console.tracking(sink, total, "orders") as pipeline:
        query = (
            orders.writeStream.foreachBatch(pipeline)
            .trigger(availableNow=True)
            .option("checkpointLocation", str(workdir / "checkpoint"))
            .start()
        )
        query.awaitTermination()
    totals = sink.totals
    sink.close()
    print(f"{totals.rows_in} orders in, {totals.rows_written} written to {args.output} in "
          f"{totals.batches} transactions, {totals.already_applied} delivered again and "
          "not written twice")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap-servers", help="a Kafka 4.2+ cluster (default: embedded)")
    parser.add_argument("--topic", default="orders")
    parser.add_argument("--group", default="enrich", help="the share group to consume as")
    parser.add_argument("--output", default="orders-enriched", help="the topic to write")
    parser.add_argument("--orders", type=int, default=1_000, help="sample orders (embedded)")
    parser.add_argument("--workdir", type=Path, help="journal and checkpoint")
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="kafka-to-kafka-"))
    # Spark's, the JVM's and the broker clients' logs go to a file; the terminal gets stages.
    with (
        RunConsole("kafka-to-kafka", workdir / "spark.log") as console,
        contextlib.ExitStack() as stack,
    ):
        bootstrap = args.bootstrap_servers
        if bootstrap is None:
            bootstrap = stack.enter_context(
                broker_with_sample_orders(args.topic, args.output, args.orders))
            console.stage(f"embedded broker at {bootstrap} with {args.orders} sample orders")
        run(console, args, bootstrap, workdir)
        keys = committed_keys(bootstrap, args.output)
        print(f"{args.output} holds {len(keys)} orders ({len(set(keys))} distinct) "
              "for read_committed readers")


if __name__ == "__main__":
    main()
