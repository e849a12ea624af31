"""Real components for tests: the embedded broker, a PostgreSQL server, a local Spark session.

Loaded as a pytest plugin (entry point ``kafka_share_eos``), so any project that installs
kafka-share-eos can use the same fixtures for its own pipeline tests.
"""
