"""A share-group-capable Kafka broker inside this process (librdkafka's mock cluster), for
development, tests, demos and benchmarks."""

from kafka_share_eos.proving_ground.broker.embedded import EmbeddedBroker, TopicSpec
from kafka_share_eos.proving_ground.broker.errors import (
    EmbeddedBrokerError,
    LibrdkafkaNotFoundError,
)

__all__ = ["EmbeddedBroker", "EmbeddedBrokerError", "LibrdkafkaNotFoundError", "TopicSpec"]
