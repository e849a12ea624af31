"""Benchmark of the Kafka topic sink against an idempotent producer, and of the pipeline through
it against the same pipeline at least once, on Apache Kafka.

The implementation is :mod:`kafka_share_eos.proving_ground.bench.topic_sink`, also run by
``kafka-share-eos bench``; ``--help`` lists the sizes this script takes.
"""

from kafka_share_eos.proving_ground.bench.topic_sink import main

if __name__ == "__main__":
    main()
