"""What a Spark Connect pipeline of the tests runs on the server, and how it is shipped there.

The client pickles a query's ``foreachBatch`` function and the server's Python worker unpickles
it. The toolkit is installed on the server; this module is not (its folder is on the tests'
path only), so it is pickled by value, as a user's own module would be where it is not
installed on the server.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark import cloudpickle

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

cloudpickle.register_pickle_by_value(sys.modules[__name__])


class DropsShareSessions:
    """The ``foreachBatch`` function ``strategy``, which after applying batch ``after`` makes
    the embedded broker drop every share session (any client's disconnect does): the source's
    ACCEPT of that batch is refused, and the broker delivers its records again."""

    def __init__(self, strategy: Any, bootstrap_servers: str, after: int = 0) -> None:
        self.strategy = strategy
        self.bootstrap_servers = bootstrap_servers
        self.after = after

    def __call__(self, batch_df: DataFrame, batch_id: int) -> None:
        # Imported here: a class of a module pickled by value would be pickled with it.
        from confluent_kafka import Producer

        self.strategy(batch_df, batch_id)
        if batch_id == self.after:
            Producer({"bootstrap.servers": self.bootstrap_servers}).list_topics(timeout=10)


def paid(rows: pa.Table) -> pa.Table:
    """A ``transform`` refusing a payment without an amount (a value that is not
    ``account:amount``), so that it becomes a dead letter.

    Raises:
        ValueError: a row has no amount.
    """
    if rows.num_rows and pc.any(pc.is_null(rows["amount"])).as_py():
        raise ValueError("a payment without an amount")
    return rows
