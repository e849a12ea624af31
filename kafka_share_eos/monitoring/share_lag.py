"""Share-group lag as Kafka reports it (KIP-1226), read with Kafka's own command-line tool.

Kafka 4.2 and later keep each share-partition's start offset and lag, returned by the admin
API's ``DescribeShareGroupOffsets``. confluent-kafka 2.16 has no such call, so the lag comes
from the tool Kafka ships for it, ``kafka-share-groups.sh --describe --group <group>`` (class
``org.apache.kafka.tools.consumer.group.ShareGroupCommand``), whose table has the columns
``GROUP TOPIC PARTITION START-OFFSET LAG``. A run starts a JVM (about 5 s), so a scrape never
waits for one: it gets the last table read, and starts a run in the background when that is
older than ``every_s`` and none is under way.
"""

from __future__ import annotations

import logging
import subprocess
from collections.abc import Sequence

from kafka_share_eos.monitoring.background import BackgroundReading

log = logging.getLogger("kafka_share_eos.monitoring")

TOOL_TIMEOUT_S = 120.0
_COLUMNS = ["GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"]


def parse_describe(output: str) -> dict[tuple[str, int], int]:
    """The lag per share-partition (``(topic, partition)``) in the tool's ``--describe``
    table; a partition the group has not started on (lag ``-``) is left out."""
    lags: dict[tuple[str, int], int] = {}
    columns: list[str] = []
    for line in output.splitlines():
        fields = line.split()
        if fields[: len(_COLUMNS)] == _COLUMNS:
            columns = fields
        elif columns and len(fields) == len(columns):
            row = dict(zip(columns, fields, strict=True))
            if row["LAG"].lstrip("-").isdigit():
                lags[(row["TOPIC"], int(row["PARTITION"]))] = int(row["LAG"])
    return lags


class ShareGroupLag(BackgroundReading[dict[tuple[str, int], int]]):
    """The lag of ``group``, refreshed in the background by running ``command``.

    Args:
        command: Kafka's tool, e.g. ``["/opt/kafka/bin/kafka-share-groups.sh"]``, with any
            option it needs to reach the cluster (``--command-config client.properties``);
            ``--bootstrap-server``, ``--describe`` and ``--group`` are added.
        bootstrap_servers: the cluster's brokers.
        group: the share group.
        every_s: how old the last reading may be before a scrape starts another.
    """

    def __init__(self, command: Sequence[str], bootstrap_servers: str, group: str,
                 every_s: float = 30.0) -> None:
        super().__init__("kse-share-group-lag", every_s, {})
        self._command = [*command, "--bootstrap-server", bootstrap_servers, "--describe",
                         "--group", group]

    @property
    def lags(self) -> dict[tuple[str, int], int]:
        """The lag per share-partition of the last table read."""
        return self.value

    def read(self) -> dict[tuple[str, int], int] | None:
        """Run the tool once and parse its table."""
        try:
            outcome = subprocess.run(self._command, capture_output=True, text=True,
                                     timeout=TOOL_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as error:
            log.warning("could not run %s: %s", self._command[0], error)
            return None
        if outcome.returncode != 0:
            log.warning("%s failed (exit %d): %s", self._command[0], outcome.returncode,
                        outcome.stderr.strip()[-500:])
            return None
        return parse_describe(outcome.stdout)
