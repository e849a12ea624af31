"""A local Spark session for tests: quiet, small, quick to start, using this interpreter."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping, Sequence

from kafka_share_eos._libs import spark_sql
from kafka_share_eos.deltaspark import with_delta_spark
from kafka_share_eos.proving_ground.launchers.jvm import java_options
from kafka_share_eos.proving_ground.launchers.processes import processes_mentioning
from kafka_share_eos.proving_ground.signals import deferred_signals


def local_spark_session(
    app_name: str = "kafka-share-eos-tests",
    cores: int = 2,
    short_lived: bool = False,
    executors: int | None = None,
    delta_spark: bool = False,
    config: Mapping[str, str] | None = None,
) -> spark_sql.SparkSession:
    """Start (or reuse) a local-mode SparkSession whose Python workers run this interpreter.

    Workers must import the same environment as the driver, otherwise the ``kafka-share`` data
    source cannot be unpickled on executors. The JVM starts from a class archive
    (:mod:`~kafka_share_eos.proving_ground.launchers.jvm`, made on the first call of an
    installation); ``short_lived`` also trades peak speed for a cheaper start, for processes that
    live seconds. With ``executors``, Spark runs ``local-cluster``: that many executor JVMs of
    ``cores`` cores each, processes apart from the driver as on a cluster (slower to start). With
    ``delta_spark``, the session is set up for delta-spark
    (:func:`~kafka_share_eos.deltaspark.with_delta_spark`). ``config`` adds Spark settings.
    """
    return spark_session(app_name, cores, java_options(short_lived), executors, delta_spark,
                         config=config)


EXECUTOR_MEMORY_MB = 1024


def jars_on_classpath(jars: Sequence[os.PathLike[str] | str]) -> dict[str, str]:
    """Settings that put ``jars`` on the class path of the driver and of every executor, for
    jars at the same path on every machine of the cluster (a local or one-host cluster).

    ``spark.jars`` would copy each jar into the driver's temporary directory at every start
    (690 MB for s3a), a directory a killed driver never removes.
    """
    classpath = os.pathsep.join(str(jar) for jar in jars)
    return {"spark.driver.extraClassPath": classpath, "spark.executor.extraClassPath": classpath}


def spark_settings_for_tests(parallelism: int) -> dict[str, str]:
    """The settings of every Spark the tests start, a local session's or a Spark Connect
    server's: no UI, ``parallelism`` tasks a stage, Arrow for pandas conversions."""
    return {
        "spark.ui.enabled": "false",
        # Its stage progress bar is carriage-return art on stderr: noise in every log.
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(parallelism),
        "spark.default.parallelism": str(parallelism),
        "spark.sql.streaming.metricsEnabled": "false",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        # A process killed while Spark writes the first offset-log entry leaves a temp file in
        # <checkpoint>/offsets, and Spark 4.1+ then refuses to start the query again
        # (STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY). The check guards shared state-store
        # directories; the pipelines run here keep no Spark state.
        "spark.sql.streaming.verifyCheckpointDirectoryEmptyOnStart": "false",
    }


def standalone_spark_session(
    master_url: str,
    app_name: str = "kafka-share-eos-tests",
    cores: int = 4,
    executor_env: Mapping[str, str] | None = None,
) -> spark_sql.SparkSession:
    """A SparkSession on a standalone cluster (``spark://host:port``, for instance a
    :class:`~kafka_share_eos.proving_ground.launchers.spark_cluster.SparkCluster`'s), taking
    ``cores`` cores of its workers in executors of :data:`EXECUTOR_MEMORY_MB`, whose Python workers
    run this interpreter with ``executor_env`` added to their environment."""
    config = {"spark.cores.max": str(cores), "spark.executor.memory": f"{EXECUTOR_MEMORY_MB}m",
              # Tasks wait until every executor is up, so that work spreads over the workers.
              "spark.scheduler.minRegisteredResourcesRatio": "1.0",
              **{f"spark.executorEnv.{key}": value
                 for key, value in (executor_env or {}).items()}}
    return spark_session(app_name, cores, java_options(short_lived=True), master=master_url,
                         config=config)


def spark_session(
    app_name: str,
    cores: int,
    java_options: Sequence[str],
    executors: int | None = None,
    delta_spark: bool = False,
    *,
    master: str | None = None,
    config: Mapping[str, str] | None = None,
) -> spark_sql.SparkSession:
    """:func:`local_spark_session` with the driver JVM's extra options given explicitly (or a
    session on ``master`` with ``cores`` cores in all, and more ``config``)."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable

    if master is None:
        master = (f"local[{cores}]" if executors is None
                  else f"local-cluster[{executors},{cores},{EXECUTOR_MEMORY_MB}]")
    parallelism = cores * (executors or 1)
    builder = (
        spark_sql.SparkSession.builder.master(master)
        .appName(app_name)
        .config(
            "spark.driver.extraJavaOptions",
            " ".join(["-Dlog4j.rootLogger=ERROR,console", *java_options]),
        )
    )
    for key, value in {**spark_settings_for_tests(parallelism), **(config or {})}.items():
        builder = builder.config(key, value)
    if delta_spark:
        # Delta reads a table's log in 50 tasks by default: far more than a small table needs.
        builder = with_delta_spark(builder).config(
            "spark.databricks.delta.snapshotPartitions", str(parallelism)
        )
    # Interrupted while the JVM starts, PySpark leaves it running without a parent: the start
    # completes first, and a signal that came meanwhile stops the session it made.
    spark = None
    try:
        with deferred_signals():
            spark = builder.getOrCreate()
    except BaseException:
        if spark is not None:
            spark.stop()
        raise
    spark.sparkContext.setLogLevel("ERROR")
    return spark


SOURCE_RUNNER_MODULE = "pyspark.sql.streaming.python_streaming_source_runner"


def wait_for_source_runners(spark: spark_sql.SparkSession, timeout_s: float = 60.0) -> None:
    """Wait until the Python source runners that ``spark``'s JVM started have exited (call it
    once the session's queries are stopped).

    Spark stops a query without waiting for its source runner, which leaves the share group as
    it exits. A query started meanwhile on the same group shares the partitions with that
    departing member until the group rebalances, and an ``availableNow`` drain can end before
    they come to it: the records stay for the next run, but a test or demo counting them
    would miss them.
    """
    if type(spark).__module__.startswith("pyspark.sql.connect"):
        return  # a Connect server's runners are out of this client's sight, maybe its machine's
    gateway = spark.sparkContext._gateway
    if gateway is None or getattr(gateway, "proc", None) is None:
        return
    jvm = gateway.proc.pid
    deadline = time.monotonic() + timeout_s
    while running := source_runners(jvm):
        if time.monotonic() >= deadline:
            raise TimeoutError(f"kafka-share source runners {running} still alive after "
                               f"{timeout_s:.0f} s")
        time.sleep(0.05)


def source_runners(parent: int) -> list[int]:
    """Pids of the ``kafka-share`` source runners that process ``parent`` (a Spark driver JVM)
    started and that are still alive."""
    return processes_mentioning(SOURCE_RUNNER_MODULE, parent=parent)
