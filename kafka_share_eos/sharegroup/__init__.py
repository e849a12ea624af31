"""The share-group side: the embedded broker and helpers for talking to share groups."""

from kafka_share_eos.sharegroup.embedded import EmbeddedBroker, TopicSpec

__all__ = ["EmbeddedBroker", "TopicSpec"]
