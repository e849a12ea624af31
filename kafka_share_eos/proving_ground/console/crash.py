"""A crash on purpose, once, right after a batch reached the sinks.

The demo and the examples show that a failure after the effects were committed changes
nothing: Spark runs the failed batch again from the journal on restart, and the broker later
redelivers its records, which were never acknowledged. :class:`CrashOnce` raises the failure;
``RunConsole.drain`` restarts the query after it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

_MESSAGE = re.compile(r"simulated crash in batch \d+ after the sink")


class SimulatedCrash(RuntimeError):
    """The failure :class:`CrashOnce` raises after batch ``batch_id`` was written."""

    def __init__(self, batch_id: int) -> None:
        super().__init__(f"simulated crash in batch {batch_id} after the sink")

    @staticmethod
    def named_in(text: str) -> str | None:
        """The crash's message if ``text`` (a Spark error wrapping it) holds one, else None."""
        found = _MESSAGE.search(text)
        return found.group(0) if found else None


class CrashOnce:
    """A ``foreachBatch`` function: ``pipeline``, then a failure once, after batch ``batch_id``
    (None: never). The failure is ``failure(batch_id)``: a :class:`SimulatedCrash` unless given,
    the failure ``RunConsole.drain`` restarts the query after.

    Raises:
        Exception: ``failure(batch_id)``, the first time batch ``batch_id`` has gone through
            ``pipeline``.
    """

    def __init__(
        self,
        pipeline: Callable[[DataFrame, int], object],
        batch_id: int | None,
        failure: Callable[[int], Exception] = SimulatedCrash,
    ) -> None:
        self.pipeline = pipeline
        self.batch_id = batch_id
        self.failure = failure

    def __call__(self, batch_df: DataFrame, batch_id: int) -> None:
        self.pipeline(batch_df, batch_id)
        if batch_id == self.batch_id:
            self.batch_id = None
            raise self.failure(batch_id)
