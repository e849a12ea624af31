"""Benchmark of the kafka-share source against a raw share-consumer loop on one embedded broker.

The implementation is :mod:`kafka_share_eos.proving_ground.bench.source`, also run by
``kafka-share-eos bench``; ``--help`` lists the sizes this script takes.
"""

from kafka_share_eos.proving_ground.bench.source import main

if __name__ == "__main__":
    main()
