"""The soak: one pipeline run for a set time on Apache Kafka with every durable path on the S3
server, a steady producer and a fault of every family every few minutes, then drained and
counted (``kafka-share-eos soak``, docs/verify.md)."""
