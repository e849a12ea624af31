"""Benchmark of ``consumers`` = 1, 2 and 4 (share consumers on executors) against each other.

The implementation is :mod:`kafka_share_eos.proving_ground.bench.consumers`, also run by
``kafka-share-eos bench``; ``--help`` lists the sizes this script takes.
"""

from kafka_share_eos.proving_ground.bench.consumers import main

if __name__ == "__main__":
    main()
