"""Shared by the tests of executor-side slots and of their planner: the options of a source
with two executor consumers reading one topic."""

from __future__ import annotations

from pathlib import Path

from kafka_share_eos.source.options import SourceOptions

TOPIC = "jobs"
GROUP = "jobs-eos"


def options(bootstrap: str, journal: Path, **extra: str) -> SourceOptions:
    return SourceOptions.parse({
        "kafka.bootstrap.servers": bootstrap, "kafka.share.group.id": GROUP,
        "subscribe": TOPIC, "journalPath": str(journal), "consumers": "2",
        "pollTimeoutMs": "3000", **extra,
    })
