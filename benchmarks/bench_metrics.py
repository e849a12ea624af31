"""Benchmark of the exactly-once pipeline with its Prometheus metrics served and scraped against
the same pipeline without.

The implementation is :mod:`kafka_share_eos.proving_ground.bench.metrics_cost`, also run by
``kafka-share-eos bench``; ``--help`` lists the sizes this script takes.
"""

from kafka_share_eos.proving_ground.bench.metrics_cost import main

if __name__ == "__main__":
    main()
