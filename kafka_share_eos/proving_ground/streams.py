"""The ``kafka-share`` stream of the pipelines the proving ground runs: the demo, the verifier's,
the benchmarks', the warm-up of the Spark class archive, and the tests'.

Each reads one topic through one share group with a journal of its own, and adds the options
its run needs; :func:`source_options` gives them, :func:`share_stream` loads them.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_share_eos.source.options import FORMAT

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def source_options(
    bootstrap_servers: str, group: str, topic: str, journal: Path | str | None, **extra: str
) -> dict[str, str]:
    """The ``kafka-share`` options reading ``topic`` through share group ``group`` of the
    brokers at ``bootstrap_servers``, journaled at ``journal`` (None leaves ``journalPath`` out,
    for a test of its absence), then ``extra`` as given (pass a dict with ``**`` for option
    names such as ``kafka.max.poll.records``)."""
    options = {
        "kafka.bootstrap.servers": bootstrap_servers,
        "kafka.share.group.id": group,
        "subscribe": topic,
    }
    if journal is not None:
        options["journalPath"] = str(journal)
    return {**options, **extra}


def batch_size(records: int, acknowledge: str = "afterCommit") -> dict[str, str]:
    """The option that sizes micro-batches at ``records`` under ``acknowledge``: the hard cap
    ``maxRecordsPerTrigger`` under afterJournal; under afterCommit, where a micro-batch is one
    poll and that cap is refused, the poll's ``kafka.max.poll.records``."""
    if acknowledge == "afterCommit":
        return {"kafka.max.poll.records": str(records)}
    return {"maxRecordsPerTrigger": str(records)}


def share_stream(spark: SparkSession, options: Mapping[str, str]) -> DataFrame:
    """The streaming DataFrame of the ``kafka-share`` source with ``options`` (see
    :func:`source_options`) in ``spark``, where the source must be registered."""
    return spark.readStream.format(FORMAT).options(**options).load()
