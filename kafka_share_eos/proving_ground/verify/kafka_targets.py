"""The verifier's Kafka-topic targets, counted by a read_committed reader of the output topic.

They need Apache Kafka (``--broker kafka``): librdkafka's mock cluster shows read_committed
readers the records of aborted transactions and fences no older producer, so a pipeline killed
inside a transaction would count as a duplicate there though Kafka never delivers it.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Sequence
from typing import Any

import confluent_kafka as ck
import pyarrow as pa

from kafka_share_eos import faults
from kafka_share_eos.proving_ground.verify.records import PlannedRecord
from kafka_share_eos.proving_ground.verify.targets import (
    Coordinates,
    Landed,
    Produced,
    RunContext,
    Target,
)
from kafka_share_eos.proving_ground.verify.targets import screening as screening_options
from kafka_share_eos.sinks.kafka_progress import records_to_end
from kafka_share_eos.sinks.kafka_writer import SOURCE_HEADER, source_of_header

OUTPUT_PARTITIONS = 2


def read_topic(bootstrap_servers: str, topic: str, *, committed: bool = True,
               timeout_s: float = 30.0) -> list[ck.Message]:
    """Every record of ``topic`` a consumer of that isolation level sees (none when the topic
    does not exist)."""
    consumer = ck.Consumer({
        "bootstrap.servers": bootstrap_servers, "group.id": f"reader-{uuid.uuid4().hex}",
        "enable.auto.commit": False, "enable.partition.eof": True,
        "allow.auto.create.topics": False,
        "isolation.level": "read_committed" if committed else "read_uncommitted",
    })
    try:
        metadata = consumer.list_topics(topic, timeout_s).topics.get(topic)
        if metadata is None or metadata.error is not None:
            return []
        return list(records_to_end(consumer, topic, metadata.partitions, timeout_s))
    finally:
        consumer.close()


def source_coordinates(message: ck.Message) -> Coordinates:
    """The ``(partition, offset)`` of the source record an output record names in its
    headers."""
    headers = {header[0]: header[1] for header in message.headers() or []
               if isinstance(header, tuple) and isinstance(header[1], bytes)}
    _, partition, offset, _ = source_of_header(headers[SOURCE_HEADER])
    return partition, offset


def _output_topic(ctx: RunContext) -> str:
    return f"{ctx.source_topic}-out"


def _with_value(screening: dict[str, Any]) -> dict[str, Any]:
    """The targets' screening, whose effect rows also carry the record to write as ``value``."""
    effects = screening["transform"]

    def transform(rows: pa.Table) -> pa.Table:
        effect = effects(rows)
        values = [json.dumps(row).encode() for row in
                  effect.select(["id", "account", "amount"]).to_pylist()]
        return effect.append_column("value", pa.array(values, pa.binary()))

    return {**screening, "transform": transform}


def _kafka_sink(ctx: RunContext, app_id: str, **options: Any) -> Any:
    from kafka_share_eos.strategies import KafkaTopicSink

    return KafkaTopicSink(_output_topic(ctx), {"bootstrap.servers": ctx.kafka()},
                          app_id=app_id, progress_topic=f"{ctx.source_topic}-progress",
                          **options)


class KafkaTopic(Target):
    name = "kafka-topic"
    description = "KafkaTopicSink: a producer transaction per batch with its marker"
    needs_transactions = True

    def setup(self, ctx: RunContext, records: Sequence[PlannedRecord]) -> None:
        from confluent_kafka.admin import AdminClient

        from kafka_share_eos.proving_ground.launchers.kafka_admin import create_topic

        admin = AdminClient({"bootstrap.servers": ctx.kafka()})
        brokers = len(admin.list_topics(timeout=30).brokers)
        create_topic(admin, _output_topic(ctx), OUTPUT_PARTITIONS, min(3, brokers), {})

    def build(self, ctx: RunContext, pipeline: str) -> Any:
        return _kafka_sink(ctx, f"verify-{pipeline}", **_with_value(screening_options(ctx)))

    def landed(self, ctx: RunContext, produced: Produced) -> Landed:
        records = read_topic(ctx.kafka(), _output_topic(ctx))
        return {"kafka": Counter(source_coordinates(m) for m in records)}


class DedupKafkaTopic(KafkaTopic):
    name = "dedup-kafka-topic"
    description = "CheckpointDedupStore: Delta identity ledger + KafkaTopicSink"
    own_points = (faults.DEDUP_BEFORE_SINK, faults.DEDUP_AFTER_SINK)
    # Held before its claim, a batch's records go to the other application, whose claim wins.
    hold_point = faults.DEDUP_BEFORE_CLAIM

    def build(self, ctx: RunContext, pipeline: str) -> Any:
        from kafka_share_eos.strategies import CheckpointDedupStore

        return CheckpointDedupStore(
            ctx.path("ledger"), _kafka_sink(ctx, f"verify-sink-{pipeline}"),
            app_id=f"verify-{pipeline}", **_with_value(screening_options(ctx)),
        )
