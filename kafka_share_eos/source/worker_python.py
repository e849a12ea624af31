"""The interpreter Spark's Python workers run, asked once when the source is registered.

The ``kafka-share`` source's reader and every strategy run in Python workers that Spark starts
with ``PYSPARK_PYTHON`` (or ``spark.pyspark.python``), not with the interpreter that built the
session. Where that interpreter lacks the toolkit, the first micro-batch fails tens of seconds
later with ``No module named 'kafka_share_eos'`` deep in a Spark traceback. One row through a
plain Python UDF at ``register`` asks the workers instead: their interpreter, its version, and
whether it imports the toolkit. It needs no ``sparkContext``, so a Spark Connect session asks
its server's workers the same way.

The probe function is pickled by value (its module is registered with cloudpickle): a worker
without the toolkit can still run it and say so.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

from kafka_share_eos._libs import spark_functions, spark_types
from kafka_share_eos.errors import ConfigurationError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

PROBE_COLUMN = "worker_python"


def _probe() -> str:
    """Run on a Python worker: its interpreter, version, and the toolkit's import."""
    import importlib
    import platform

    try:
        importlib.import_module("kafka_share_eos")
        missing = None
    except ImportError as error:
        missing = str(error)
    return json.dumps({"executable": sys.executable, "version": platform.python_version(),
                       "missing": missing})


def _pickled_by_value() -> None:
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]


def require_toolkit_on_workers(spark: SparkSession) -> None:
    """Raise unless the Python workers of ``spark`` import the toolkit.

    Raises:
        ConfigurationError: the workers' interpreter cannot import ``kafka_share_eos``; the
            message names that interpreter, the settings that choose it, and this one.
    """
    _pickled_by_value()
    # A type, not "string": Connect parses a type's name through the thread's active session,
    # which need not be ``spark``.
    probe = spark_functions.udf(_probe, spark_types.StringType(), useArrow=False)
    row = spark.range(1).select(probe().alias(PROBE_COLUMN)).first()
    assert row is not None  # one row in, one row out
    found = json.loads(row[PROBE_COLUMN])
    if found["missing"] is None:
        return
    raise ConfigurationError(
        f"Spark's Python workers run {found['executable']} (Python {found['version']}), which "
        f"cannot import kafka_share_eos ({found['missing']}): point PYSPARK_PYTHON or "
        "spark.pyspark.python at an interpreter with kafka-share-eos installed (this one is "
        f"{sys.executable}), or install it where the workers run"
    )
