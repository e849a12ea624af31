"""The source's planner driven directly, as Spark's source runner would, over a private
embedded broker holding the records."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from helpers import broker_holding
from kafka_share_eos import EmbeddedBroker
from kafka_share_eos.source.options import SourceOptions


def broker_fixture(topic: str, records: int) -> Any:
    """A fixture named ``broker``: a private embedded broker with ``records`` values on
    ``topic`` (assign it to ``broker`` in the test module)."""

    @pytest.fixture
    def broker() -> Iterator[EmbeddedBroker]:
        with broker_holding(topic, records) as held:
            yield held

    return broker


def planner_options(
    broker: EmbeddedBroker, topic: str, group: str, journal: Path, **extra: str
) -> SourceOptions:
    """Options of a planner reading ``topic`` in share group ``group`` into ``journal``;
    ``extra`` adds or overrides options."""
    return SourceOptions.parse(
        {
            "kafka.bootstrap.servers": broker.bootstrap_servers,
            "kafka.share.group.id": group,
            "subscribe": topic,
            "journalPath": str(journal),
            "pollTimeoutMs": "3000",
            **extra,
        }
    )
