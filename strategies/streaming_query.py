"""The streaming query whose batches a strategy applies, in a classic and in a Connect session.

A strategy names its bookkeeping after the query (a Delta application id, a Kafka transactional
id) so that two queries writing one target keep apart, and a query restarted on its checkpoint
finds its own. Spark gives the query's id two ways:

- in a classic session the strategy runs in the driver, on the thread running the batch, where
  Spark set the id as the local property ``sql.streaming.queryId``;
- in a Spark Connect session the client pickles the strategy when the query starts, and a
  Python worker of the server unpickles it once and runs every batch of that query run; no
  thread property reaches it. The worker unpickles the strategy while the client's session is
  still its active session, and before the query is registered there: so the query that
  session gained by the first batch is the strategy's own, and its id is kept for the rest of
  the run. Two queries of one Connect session started at the same moment cannot be told apart
  this way; that is refused at the first batch, naming the fix.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from kafka_share_eos.errors import ConfigurationError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.connect.session import SparkSession as ConnectSession

# Set by PySpark in the Connect server's foreachBatch worker (and in every Connect client).
_CONNECT_MODE = "SPARK_CONNECT_MODE_ENABLED"
_WORKER_URL = "SPARK_CONNECT_LOCAL_URL"


class ConnectQuery:
    """Finds, in a Connect server's foreachBatch worker, the query the strategy runs for.

    Args:
        session: the client's session, active in the worker while it unpickles the strategy.
    """

    def __init__(self, session: ConnectSession) -> None:
        self._session = session
        self._before = frozenset(query.id for query in session.streams.active)
        self._id: str | None = None

    @classmethod
    def of_worker(cls) -> ConnectQuery | None:
        """The finder of the query being started, when called while a Connect server's
        foreachBatch worker unpickles a strategy; None anywhere else."""
        if os.environ.get(_CONNECT_MODE) != "1" or _WORKER_URL not in os.environ:
            return None
        from pyspark.sql.connect.session import SparkSession

        session = SparkSession.getActiveSession()
        return None if session is None else cls(session)

    def query_id(self) -> str:
        """The id of the query the strategy runs for.

        Raises:
            ConfigurationError: several queries of the client's session were started at the
                same moment, so which one runs this strategy is unknown.
        """
        if self._id is None:
            started = sorted({query.id for query in self._session.streams.active} - self._before)
            if len(started) != 1:
                raise ConfigurationError(
                    f"this strategy cannot tell which of the queries {started} it runs for: "
                    "they were started at the same moment in one Spark Connect session; start "
                    "each query once the one before has run its first batch, or start them from "
                    "sessions of their own"
                )
            self._id = started[0]
        return self._id


def streaming_query_id(batch_df: DataFrame, connect: ConnectQuery | None = None) -> str | None:
    """The id of the streaming query running ``foreachBatch`` on ``batch_df``; None for a
    static DataFrame, or a Connect session where no ``connect`` finder was kept.

    Raises:
        ConfigurationError: see :meth:`ConnectQuery.query_id`.
    """
    if connect is not None:
        return connect.query_id()
    session = batch_df.sparkSession
    if _is_connect(session):
        return None
    query_id = session.sparkContext.getLocalProperty("sql.streaming.queryId")
    return str(query_id) if query_id else None


def _is_connect(session: SparkSession) -> bool:
    # A Connect session has no SparkContext: asking it for one raises.
    return type(session).__module__.startswith("pyspark.sql.connect")
