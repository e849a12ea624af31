"""The journal: the files a ``kafka-share`` source leaves under its ``journalPath``.

Each micro-batch's records as Arrow segments (the only copy a replay can read), the consumers'
leases on their record locks, the batch metrics and the records a strategy refused for the
source to REJECT. The source writes them; its status, the metrics exporter, the brokers'
dead-letter queue, the command line and the benchmarks read them, each through one
:class:`Journal` opened on the location once.
"""

from __future__ import annotations

from kafka_share_eos.errors import JournalError
from kafka_share_eos.journal.leases import EXECUTOR, RUNNER, Lease, Leases
from kafka_share_eos.journal.metrics import BatchMetrics
from kafka_share_eos.journal.metrics_store import DEFAULT_KEPT, MetricsStore
from kafka_share_eos.journal.rejections import Coordinates, RecordRejections
from kafka_share_eos.journal.segments import Journal
from kafka_share_eos.journal.status import (
    RUNNER_MEMBER,
    JournalStatus,
    Segment,
    Totals,
    inspect_journal,
)

__all__ = [
    "DEFAULT_KEPT",
    "EXECUTOR",
    "RUNNER",
    "RUNNER_MEMBER",
    "BatchMetrics",
    "Coordinates",
    "Journal",
    "JournalError",
    "JournalStatus",
    "Lease",
    "Leases",
    "MetricsStore",
    "RecordRejections",
    "Segment",
    "Totals",
    "inspect_journal",
]
