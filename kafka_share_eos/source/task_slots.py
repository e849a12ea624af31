"""The one warning the source's planning logs when ``consumers`` exceeds the session's task
slots.

Each of a batch's N slots is a task that polls for up to ``pollTimeoutMs``: a session with fewer
task slots runs them in turns, the later ones only once earlier ones ended, so a batch takes
several poll timeouts, and a consumer waiting for its turn keeps its partitions, with whatever
its client fetched for it still locked.

The session's settings are read where it registers the source
(:func:`~kafka_share_eos.spark_slots.session_settings`, at ``register``) and carried to the
source's planning in Spark's source runner (:func:`warn_if_consumers_wait`), where the stream's
``consumers`` is known; :mod:`kafka_share_eos.spark_slots` says how they make a count.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from kafka_share_eos.spark_slots import task_slots

log = logging.getLogger("kafka_share_eos.source")


def warn_if_consumers_wait(consumers: int, settings: Mapping[str, str] | None) -> int | None:
    """Log one warning when the session has fewer task slots than ``consumers``; return the
    slots found (None: unknown, or settings not carried from the session)."""
    slots = None if settings is None else task_slots(settings)
    if slots is not None and consumers > slots:
        log.warning(
            "kafka-share source: 'consumers' is %d but the session runs %d tasks at once "
            "(spark.master %s): the slots' tasks take turns, so each batch waits for them, and "
            "a consumer waiting for its turn keeps its partitions, any records its client "
            "fetched staying locked, their lock budget running, until its task polls them; "
            "set 'consumers' to %d or give the session more task slots",
            consumers, slots, settings.get("spark.master", "unset") if settings else "unset",
            slots,
        )
    return slots
