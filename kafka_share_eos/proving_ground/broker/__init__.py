"""A share-group-capable Kafka broker inside this process (librdkafka's mock cluster), for
development, tests, demos and benchmarks."""

from kafka_share_eos.proving_ground.broker.embedded import EmbeddedBroker, TopicSpec

__all__ = ["EmbeddedBroker", "TopicSpec"]
