"""kafka-share-eos: exactly-once effects for PySpark pipelines on Kafka share groups.

The data flow is share group -> source/journal -> strategy -> sink. The public surface:

- :class:`EmbeddedBroker`, a share-group-capable Kafka broker in this process;
- :func:`register`, which makes ``spark.readStream.format("kafka-share")`` available;
- :mod:`kafka_share_eos.strategies`, the ``foreachBatch`` strategies;
- :mod:`kafka_share_eos.deadletter`, where strategies put the records they cannot apply.

Heavy optional dependencies (pyspark, sqlalchemy, deltalake) are imported only when used.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from kafka_share_eos.sharegroup import EmbeddedBroker, TopicSpec

if TYPE_CHECKING:
    from kafka_share_eos.source import register as register

__version__ = "0.1.0"

_LAZY = {
    "register": "kafka_share_eos.source",
}

__all__ = ["EmbeddedBroker", "TopicSpec", "__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'kafka_share_eos' has no attribute {name!r}")
    return getattr(import_module(module), name)
