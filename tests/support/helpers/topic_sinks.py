"""Shared by the tests of Kafka topic sinks on the embedded broker: the output topic, a share
topic of the embedded broker."""

from __future__ import annotations

from typing import Any

import pytest

from kafka_share_eos import EmbeddedBroker
from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic


def output_fixture() -> Any:
    """A fixture named ``output``: the name of the topic a sink writes to (assign it to
    ``output`` in the test module)."""

    @pytest.fixture
    def output(embedded_broker: EmbeddedBroker, share_topic: ShareTopic) -> str:
        return share_topic.topic

    return output
