"""The pipeline the verifier crashes:
``python -m kafka_share_eos.proving_ground.verify.pipeline CONFIG NAME``.

It reads the run's share group through the ``kafka-share`` source with ``availableNow`` (so it
exits once the group is drained), turns each micro-batch into effect rows and hands them to the
target's strategy, appending to ``progress.jsonl`` in its directory one line with the records of
each batch it starts (before the strategy runs) and one line per finished batch.
Restarted on the same directory, it resumes from its checkpoint and journal (in its directory,
or on an object store whose settings its environment gives).

Run in its own session (the verifier starts it with ``start_new_session=True``), it makes crash
points kill its whole process group: the Spark JVM, the source runner and the Python workers die
together with the driver, as on a machine failure.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kafka_share_eos import faults
from kafka_share_eos.proving_ground.streams import batch_size, share_stream, source_options
from kafka_share_eos.proving_ground.verify.known_targets import TARGETS
from kafka_share_eos.proving_ground.verify.records import effect_rows
from kafka_share_eos.proving_ground.verify.stall import ConsumerStall
from kafka_share_eos.proving_ground.verify.targets import RunContext

PROGRESS_FILE = "progress.jsonl"
START_BARRIER_ENV = "KSE_VERIFY_START_TOGETHER"
"""``<directory>:<count>``: the pipelines starting together mark themselves ready there."""
START_BARRIER_TIMEOUT_S = 120.0
WORKER_ENV = "KSE_VERIFY_WORKER_ENV"
"""JSON of environment variables for the process that runs ``foreachBatch``: in a Spark
Connect session that is a worker of the server, which has the server's environment, not the
client's, so a hold armed for one start travels there with the pickled function."""
STARTING_ENV = "KSE_VERIFY_STARTING"
"""A file the pipeline creates just before it starts its query."""


@dataclass(frozen=True)
class PipelineConfig:
    """Everything a pipeline process needs, written as JSON by the verifier."""

    target: str
    run_dir: str
    bootstrap_servers: str
    topic: str
    group_id: str
    postgres_url: str | None = None
    max_records_per_trigger: int = 10
    max_poll_records: int | None = None
    """``kafka.max.poll.records``, if not the source's choice; under afterJournal a poll size
    that does not divide ``max_records_per_trigger`` makes polls cross batch boundaries."""
    idle_ms: int = 2000
    slow_sink_seconds: float = 0.0
    slow_sink_share: float = 0.0
    seed: int = 0
    acknowledge: str = "afterCommit"
    consumers: int = 1
    lock_duration_ms: int = 30_000
    session_timeout_ms: int = 45_000
    handoff_stall_seconds: float = 0.0
    """With a hold armed (``KSE_HOLD_AT`` and ``KSE_HOLD_GATE``), how long the held batch's
    application stalls its share consumers (see
    :mod:`kafka_share_eos.proving_ground.verify.stall`)."""
    spark_master: str | None = None
    """A Spark standalone master (``spark://host:port``) to run on, with one core per
    consumer, instead of in-process Spark."""
    spark_remote: str | None = None
    """A Spark Connect server's URL (``sc://host:port``): the pipeline is a client of it, and
    the query, its source and its ``foreachBatch`` run there."""
    store_root: str | None = None
    """An object store URI (no credentials: the store's settings come from the process's
    environment) under which every durable path lives instead of the run directory: each
    pipeline's journal and, on S3, its Spark checkpoint (through s3a), and the run's tables,
    ledger, decision logs and dead letters."""
    driver_heap_mb: int | None = None
    """A local driver's fixed heap (:func:`~kafka_share_eos.proving_ground.launchers.jvm.
    fixed_heap_options`), for a pipeline that runs for long; by default the driver is started
    for a short life."""

    def save(self, path: Path) -> None:
        """Write the configuration as JSON."""
        path.write_text(json.dumps(asdict(self)))

    @classmethod
    def load(cls, path: Path) -> PipelineConfig:
        """Read a configuration written by :meth:`save`."""
        return cls(**json.loads(path.read_text()))

    def context(self) -> RunContext:
        """The run's state locations."""
        return RunContext(Path(self.run_dir), self.postgres_url, self.bootstrap_servers,
                          self.topic, store_root=self.store_root)

    def pipeline_dir(self, name: str) -> Path:
        """The directory of pipeline ``name``: checkpoint, journal, progress, logs."""
        return Path(self.run_dir) / f"pipeline-{name}"

    def journal(self, name: str) -> str:
        """The journal of pipeline ``name``: under :attr:`store_root`, or in its directory."""
        if self.store_root is None:
            return str(self.pipeline_dir(name) / "journal")
        return f"{self.store_root.rstrip('/')}/pipeline-{name}/journal"

    def checkpoint(self, name: str) -> str:
        """The Spark checkpoint of pipeline ``name``: on S3 (``s3a://``) under
        :attr:`store_root`, or in its directory (Azure Blob's Hadoop connector is not fetched)."""
        if self.store_root is None or not self.store_root.startswith("s3://"):
            return str(self.pipeline_dir(name) / "checkpoint")
        return f"s3a://{self.store_root.removeprefix('s3://').rstrip('/')}/pipeline-{name}/checkpoint"


class VerifyBatch:
    """The ``foreachBatch`` function: effect rows to the strategy, progress lines per batch."""

    def __init__(self, config: PipelineConfig, strategy: Any, progress: Path) -> None:
        self._strategy = strategy
        self._count_first = config.consumers > 1
        self._progress = progress
        self._slow_seconds = config.slow_sink_seconds
        self._slow_share = config.slow_sink_share
        self._rng = random.Random(f"{config.seed}:{os.getpid()}")
        self._worker_env: dict[str, str] = json.loads(os.environ.get(WORKER_ENV) or "{}")

    def __call__(self, batch_df: Any, batch_id: int) -> None:
        if self._worker_env:
            os.environ.update(self._worker_env)
            self._worker_env = {}
        if self._count_first:
            # A second Spark action over the batch, as strategies that count first run: its
            # slot tasks must read what the first action's tasks journaled.
            batch_df.count()
        batch = batch_df.toArrow()
        # Which records this application held, to count those another one held as well:
        # written before the strategy runs, since a batch killed mid-way held them too.
        held = [list(c) for c in zip(batch["partition"].to_pylist(),
                                     batch["offset"].to_pylist(), strict=True)]
        # The process tells query runs apart: a Connect server runs each in a worker of its own.
        self._append({"batch": batch_id, "started": True, "records": held, "pid": os.getpid()})
        redelivered = sum(1 for n in batch["deliveryCount"].to_pylist() if n and n > 1)
        if self._slow_seconds and self._rng.random() < self._slow_share:
            # Holding the batch past the record lock duration makes the broker redeliver it.
            time.sleep(self._slow_seconds)
        # Safe strategies decode rows themselves (and dead-letter the poison record); the unsafe
        # control is given effect rows, poison included.
        rows = batch if getattr(self._strategy, "transform", None) else effect_rows(
            batch, poison_fails=False
        )
        report = self._strategy.apply(rows, batch_id)
        self._append({
            "batch": batch_id,
            "rows": batch.num_rows,
            "redelivered": redelivered,
            "absorbed": report.duplicates_in_batch + report.already_applied,
            "written": report.rows_written,
            "time": time.time(),
        })

    def _append(self, line: dict[str, Any]) -> None:
        with self._progress.open("a") as out:
            out.write(json.dumps(line) + "\n")


def run(config: PipelineConfig, name: str) -> None:
    """Run pipeline ``name`` of the run until its share group is drained."""
    import kafka_share_eos
    from kafka_share_eos.proving_ground.launchers.jvm import fixed_heap_options, java_options
    from kafka_share_eos.proving_ground.launchers.spark import (
        spark_session,
        standalone_spark_session,
    )

    if os.getpgrp() == os.getpid():
        os.environ.setdefault(faults.CRASH_PGID_ENV, str(os.getpgrp()))
    directory = config.pipeline_dir(name)
    directory.mkdir(parents=True, exist_ok=True)
    _arm_stall(config)
    target = TARGETS[config.target]()
    strategy = target.build(config.context(), name)
    # Several consumers need several tasks at a time: one Python worker, one consumer each.
    cores = 2 if config.consumers > 1 else 1
    app_name = f"kafka-share-eos-verify-{name}"
    if config.spark_remote:
        from kafka_share_eos._libs import spark_sql

        spark = spark_sql.SparkSession.builder.remote(config.spark_remote).create()
    elif config.spark_master:
        spark = standalone_spark_session(config.spark_master, app_name, cores=config.consumers)
    else:
        java, heap = (fixed_heap_options(config.driver_heap_mb) if config.driver_heap_mb
                      else (java_options(short_lived=True), {}))
        spark = spark_session(app_name, cores, java, delta_spark=target.delta_spark,
                              config={**_checkpoint_filesystem(config.checkpoint(name)), **heap})
    kafka_share_eos.register(spark)
    _wait_for_the_others(name)
    poll_records = ({} if config.max_poll_records is None
                    else {"kafka.max.poll.records": str(config.max_poll_records)})
    stream = share_stream(spark, source_options(
        config.bootstrap_servers, config.group_id, config.topic, config.journal(name),
        availableNowIdleMs=str(config.idle_ms),
        acknowledge=config.acknowledge,
        consumers=str(config.consumers),
        lockDurationMs=str(config.lock_duration_ms),
        sessionTimeoutMs=str(config.session_timeout_ms),
        **{**batch_size(config.max_records_per_trigger, config.acknowledge), **poll_records},
    ))
    if starting := os.environ.get(STARTING_ENV):
        Path(starting).touch()
    query = (
        stream.writeStream.foreachBatch(VerifyBatch(config, strategy, directory / PROGRESS_FILE))
        .trigger(availableNow=True)
        .option("checkpointLocation", config.checkpoint(name))
        .start()
    )
    query.awaitTermination()
    spark.stop()


def _checkpoint_filesystem(checkpoint: str) -> dict[str, str]:
    """The Spark settings a checkpoint at ``checkpoint`` needs: s3a's, pointed at the store this
    process's environment names."""
    if not checkpoint.startswith("s3a://"):
        return {}
    from kafka_share_eos.proving_ground.launchers.hadoop_aws import s3a_spark_config

    return s3a_spark_config(os.environ)


def _wait_for_the_others(name: str) -> None:
    """Beside other applications, join the share group once every one of them arrived here (at
    least once): one that started its JVM faster would otherwise take every record before the
    others join."""
    barrier = os.environ.get(START_BARRIER_ENV)
    if not barrier:
        return
    directory, expected = barrier.rsplit(":", 1)
    Path(directory, name).touch()
    deadline = time.monotonic() + START_BARRIER_TIMEOUT_S
    while len(list(Path(directory).iterdir())) < int(expected):
        if time.monotonic() > deadline:
            return  # the others are late: go on alone rather than fail the run
        time.sleep(0.1)


def _arm_stall(config: PipelineConfig) -> None:
    hold, gate = os.environ.get(faults.HOLD_AT_ENV), os.environ.get(faults.HOLD_GATE_ENV)
    if config.handoff_stall_seconds and hold and gate:
        (point,) = faults.parse_hold_at(hold)
        ConsumerStall(Path(gate), point, config.handoff_stall_seconds).start()


if __name__ == "__main__":
    run(PipelineConfig.load(Path(sys.argv[1])), sys.argv[2])
