"""The embedded broker's errors.

They derive from :class:`~kafka_share_eos.errors.KafkaShareEosError` like every error of the
toolkit, and are public with the broker, which a pipeline's own tests and demos start
(docs/errors.md)."""

from __future__ import annotations

from kafka_share_eos.errors import KafkaShareEosError

__all__ = ["EmbeddedBrokerError", "LibrdkafkaNotFoundError"]


class EmbeddedBrokerError(KafkaShareEosError, RuntimeError):
    """The embedded broker could not start, create a topic, or is not running."""


class LibrdkafkaNotFoundError(EmbeddedBrokerError):
    """The librdkafka shared library bundled with confluent-kafka could not be located."""
