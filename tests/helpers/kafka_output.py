"""Reading a Kafka output topic to its end, as a read_committed or read_uncommitted consumer."""

from __future__ import annotations

import uuid

import confluent_kafka as ck


def read_topic(
    bootstrap_servers: str, topic: str, *, committed: bool = True
) -> list[ck.Message]:
    """Every record of ``topic`` a consumer of that isolation level sees, partition by partition."""
    consumer = ck.Consumer({
        "bootstrap.servers": bootstrap_servers, "group.id": f"reader-{uuid.uuid4().hex}",
        "enable.auto.commit": False, "enable.partition.eof": True,
        "isolation.level": "read_committed" if committed else "read_uncommitted",
    })
    try:
        partitions = sorted(consumer.list_topics(topic, 30).topics[topic].partitions)
        consumer.assign([ck.TopicPartition(topic, p, ck.OFFSET_BEGINNING) for p in partitions])
        seen, ended = [], set()
        while len(ended) < len(partitions):
            message = consumer.poll(30)
            assert message is not None, f"{topic} was not read to its end in 30 s"
            error = message.error()
            if error is not None:
                assert error.code() == ck.KafkaError._PARTITION_EOF, error
                ended.add(message.partition())
            else:
                seen.append(message)
        return seen
    finally:
        consumer.close()


def source_offsets(messages: list[ck.Message]) -> list[int]:
    """The source offsets the records' ``kse.source.offset`` headers name, sorted."""
    return sorted(int(dict(m.headers() or [])["kse.source.offset"]) for m in messages)
