"""The verifier's defaults: one value each for ``MatrixOptions``, ``RunSpec``, ``Mix`` and the
options of ``kafka-share-eos verify``."""

from __future__ import annotations

from kafka_share_eos.proving_ground.verify.broker_choice import BrokerKind
from kafka_share_eos.proving_ground.verify.run_store import StorageKind

RECORDS = 40
RUNS = 1
CRASHES = 2
PER_TRIGGER = 10
PARTITIONS = 3
SEED = 0
PARALLEL = 1
PIPELINES = 1
CONSUMERS = 1
BROKER: BrokerKind = "embedded"
STORAGE: StorageKind = "local"
