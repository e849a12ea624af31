"""Real components for tests, verify and benchmarks: Apache Kafka from Maven Central, a
PostgreSQL server, Spark local and standalone, a TCP proxy that can cut connections; each
fetched once into a cache outside the repository, started on free ports, and always stopped."""
