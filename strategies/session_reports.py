"""A strategy's batch reports, handed from a Spark Connect server to the client's session.

In a Connect session the strategy applies its batches in a Python worker of the server, a copy
unpickled there; the object the client holds never runs a batch, so its reports stay empty.
The worker keeps the client's session (its session id) from the moment it unpickles the copy:
after every batch it writes its running totals, and the times of its latest batches, as one
JSON value of that session's runtime configuration, under a key the client's object and its
copies share. The client reads it back with one configuration lookup
(:func:`read_session_reports`); nothing else is needed on the server, and the client may run on
another machine.

A later run in the same session (the query started again) goes on from the totals the earlier
run left, so the totals only grow while the session lives. Metrics are not data: a value that
cannot be written is logged once and the batch stands.
"""

from __future__ import annotations

import json
import logging
import os
from collections import deque
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.strategies.report import BatchReport, ReportTotals

if TYPE_CHECKING:
    from pyspark.sql.connect.session import SparkSession as ConnectSession

log = logging.getLogger("kafka_share_eos.strategies")

KEY_PREFIX = "kafka_share_eos.reports."
"""The runtime configuration keys the reports are written under, one per strategy object."""

RECENT = 256
"""How many of the latest batches' times are kept in the value: a reader that looks at least
once per 256 batches (a scrape every 15 s; a micro-batch takes 0.3 s at the least) sees each."""

_CONNECT_MODE = "SPARK_CONNECT_MODE_ENABLED"
_WORKER_URL = "SPARK_CONNECT_LOCAL_URL"


@dataclass
class SessionReportsValue:
    """What one strategy object and its copies reported in one session: ``totals`` over every
    batch, and ``seconds`` of the latest (at most :data:`RECENT`), the last of batch number
    ``totals.batches``."""

    totals: ReportTotals = field(default_factory=ReportTotals)
    seconds: deque[float] = field(default_factory=lambda: deque(maxlen=RECENT))

    def plus(self, report: BatchReport) -> SessionReportsValue:
        """This value with ``report`` added."""
        seconds = deque(self.seconds, maxlen=RECENT)
        seconds.append(report.seconds)
        return SessionReportsValue(self.totals.plus(report), seconds)

    def to_json(self) -> str:
        """The value as written to the session's configuration."""
        return json.dumps({"totals": asdict(self.totals), "seconds": list(self.seconds)})

    @classmethod
    def from_json(cls, text: str) -> SessionReportsValue:
        """The value written by :meth:`to_json`.

        Raises:
            ConfigurationError: ``text`` is not such a value.
        """
        try:
            parsed = json.loads(text)
            totals = ReportTotals(**parsed["totals"])
            seconds = deque((float(s) for s in parsed["seconds"]), maxlen=RECENT)
        except (TypeError, KeyError, json.JSONDecodeError) as error:
            raise ConfigurationError(
                f"not a strategy's session reports: {text[:80]!r}") from error
        return cls(totals, seconds)


class SessionReports:
    """Writes a strategy copy's reports to the client's session (see the module).

    Args:
        session: the client's session, kept by the Connect server's worker.
        key: the strategy object's key, shared by the client's object and its copies.
    """

    def __init__(self, session: ConnectSession, key: str) -> None:
        self._session = session
        self._key = KEY_PREFIX + key
        self._value: SessionReportsValue | None = None
        self._failed = False

    @classmethod
    def of_worker(cls, key: str) -> SessionReports | None:
        """The writer for a strategy being unpickled in a Connect server's foreachBatch worker;
        None anywhere else (a classic session's driver keeps its reports in the object)."""
        if os.environ.get(_CONNECT_MODE) != "1" or _WORKER_URL not in os.environ:
            return None
        from pyspark.sql.connect.session import SparkSession

        session = SparkSession.getActiveSession()
        return None if session is None else cls(session, key)

    def add(self, strategy: str, report: BatchReport) -> None:
        """Add ``report`` to the session's value; a failure is logged once, never raised."""
        try:
            if self._value is None:
                self._value = read_session_reports(self._session, self._key[len(KEY_PREFIX):])
            value = (self._value or SessionReportsValue()).plus(report)
            self._session.conf.set(self._key, value.to_json())
            self._value = value
        except Exception as error:
            if not self._failed:
                self._failed = True
                log.warning("%s: cannot hand the batch reports to the client's session (%s); "
                            "the batches are applied all the same", strategy, error)


def read_session_reports(session: Any, key: str) -> SessionReportsValue | None:
    """What the copies of the strategy object with ``key`` reported in ``session`` (a Connect
    session), None before its first batch.

    Raises:
        ValueError: the key holds something else.
    """
    text = session.conf.get(KEY_PREFIX + key, None)
    return None if not text else SessionReportsValue.from_json(text)
