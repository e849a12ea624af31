"""Faults run as verify cells: a broker killed or restarted mid-batch, the pipeline cut off from
the brokers, a Spark worker lost, a rolling upgrade of Kafka, PostgreSQL killed, maintenance on
the Delta tables, the object store killed, failing, slow or unreachable, and whatever else is
registered in :mod:`~kafka_share_eos.proving_ground.verify.outages.registry`."""

from kafka_share_eos.proving_ground.verify.outages import broker_kills as broker_kills
from kafka_share_eos.proving_ground.verify.outages import databases as databases
from kafka_share_eos.proving_ground.verify.outages import delta_jobs as delta_jobs
from kafka_share_eos.proving_ground.verify.outages import network as network
from kafka_share_eos.proving_ground.verify.outages import stores as stores
from kafka_share_eos.proving_ground.verify.outages import upgrades as upgrades
from kafka_share_eos.proving_ground.verify.outages import workers as workers
from kafka_share_eos.proving_ground.verify.outages.registry import (
    OUTAGES,
    Outage,
    Scene,
    brokers_for,
    check_faults,
    proxied_for,
    register,
    spark_workers_for,
)

__all__ = ["OUTAGES", "Outage", "Scene", "brokers_for", "check_faults", "proxied_for",
           "register", "spark_workers_for"]
