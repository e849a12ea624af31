"""Benchmark of the toolkit against its peers on Apache Kafka: the source against a raw
ShareConsumer loop, a share group against a consumer group, several consumers against as many
raw processes, and each strategy's pipeline against Spark's own Kafka source.

The implementation is :mod:`kafka_share_eos.proving_ground.bench.peers`, also run by
``kafka-share-eos bench``; ``--help`` lists the sizes this script takes.
"""

from kafka_share_eos.proving_ground.bench.peers import main

if __name__ == "__main__":
    main()
