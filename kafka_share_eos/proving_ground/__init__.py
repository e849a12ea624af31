"""The proving ground around the runtime: what starts, breaks and measures a pipeline, never
what a pipeline runs.

- :mod:`~kafka_share_eos.proving_ground.broker`: the embedded share-group broker;
- :mod:`~kafka_share_eos.proving_ground.launchers`: Apache Kafka, PostgreSQL, Spark (local and
  standalone) and a TCP proxy, fetched, started and always stopped by the project itself;
- :mod:`~kafka_share_eos.proving_ground.pytest_plugin`: those as pytest fixtures (entry point
  ``kafka_share_eos``), for this suite and for users' own pipeline tests;
- :mod:`~kafka_share_eos.proving_ground.verify`: the chaos verifier behind
  ``kafka-share-eos verify``;
- :mod:`~kafka_share_eos.proving_ground.bench`: the benchmarks behind ``kafka-share-eos bench``;
- :mod:`~kafka_share_eos.proving_ground.demo`: ``kafka-share-eos demo``.

Everything here may import the runtime; no runtime module imports anything here (an
import-linter contract in ``pyproject.toml``, checked by ``./dev test``).
"""
