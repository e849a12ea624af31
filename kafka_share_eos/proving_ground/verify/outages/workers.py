"""The loss of a Spark machine: a standalone cluster's worker SIGKILLed with its executors and
their Python workers mid-batch, started again once the stream applied records without it.

A run of this fault runs its pipeline on a
:class:`~kafka_share_eos.proving_ground.launchers.spark_cluster.SparkCluster` of two workers on
loopback instead of in-process Spark, with two share consumers polling in executor tasks
(``consumers=2``, ``acknowledge=afterJournal``): one executor on each worker. The journal is a path
of this machine, which both workers share. The killed executor's share consumers die without a word:
the records they had acquired come back once their lock expires or their session times out,
and the surviving executor runs every slot until the worker is back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_share_eos.proving_ground.errors import SparkClusterError
from kafka_share_eos.proving_ground.verify.outages.registry import Outage, Scene, register

if TYPE_CHECKING:
    from kafka_share_eos.proving_ground.launchers.spark_cluster import SparkCluster

WORKER = 0
"""The worker killed: each of the two runs one of the application's executors."""


@register
class WorkerKill(Outage):
    name = "worker-kill"
    description = ("SIGKILL a Spark standalone worker with its executors and their Python "
                   "workers, mid-batch; start it again once the stream applied records without it")
    brokers = 1
    spark_workers = 2
    consumers = 2

    def strike(self, scene: Scene) -> str:
        killed = self._cluster(scene).kill_worker(WORKER)
        return (f"SIGKILL worker {WORKER} of the Spark cluster and the {len(killed) - 1} "
                "processes under it (its executor, their Python workers)")

    def heal(self, scene: Scene) -> None:
        self._cluster(scene).restart_worker(WORKER)

    def _cluster(self, scene: Scene) -> SparkCluster:
        if scene.spark is None:
            raise SparkClusterError("worker-kill needs the run's Spark standalone cluster")
        return scene.spark
