"""The servers a soak runs on, started together and stopped together: a three-node Apache
Kafka cluster, a durable PostgreSQL server and the S3 server, which the pipelines reach through
mitmproxy's fault front and, behind it, a Toxiproxy proxy."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from kafka_share_eos.proving_ground.launchers.http_faults import HttpFaults
from kafka_share_eos.proving_ground.launchers.postgres import PostgresServer
from kafka_share_eos.proving_ground.launchers.s3_server import S3Server
from kafka_share_eos.proving_ground.launchers.toxiproxy import Proxy, Toxiproxy
from kafka_share_eos.proving_ground.verify.broker_choice import VerifyBroker, verify_broker

KAFKA_NODES = 3


@dataclass(frozen=True)
class Services:
    """The running servers of a soak."""

    broker: VerifyBroker
    postgres: PostgresServer
    s3: S3Server
    store_proxy: Proxy
    http_faults: HttpFaults

    def pipeline_environment(self) -> dict[str, str]:
        """The store's settings for a pipeline process: the S3 server's, with the endpoint of
        the fronts the faults strike through."""
        return {**self.s3.environment(), "AWS_ENDPOINT_URL": self.http_faults.endpoint}


@contextlib.contextmanager
def soak_services() -> Iterator[Services]:
    """Start every server of a soak, Kafka beside the others; stop them all at the end."""
    # The pool ends first: a Kafka cluster still starting when another server failed joins
    # the stack before the stack stops everything.
    with contextlib.ExitStack() as stack, ThreadPoolExecutor(1) as pool:
        starting = pool.submit(stack.enter_context,
                               verify_broker("kafka", short_locks=True, brokers=KAFKA_NODES))
        postgres = stack.enter_context(PostgresServer(durable=True))
        s3 = stack.enter_context(S3Server())
        toxiproxy = stack.enter_context(Toxiproxy())
        proxy = toxiproxy.proxy(s3.endpoint.removeprefix("http://"), name="s3")
        front = stack.enter_context(HttpFaults(f"http://{proxy.address}"))
        broker = starting.result()
        yield Services(broker, postgres, s3, proxy, front)
