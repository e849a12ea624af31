"""Benchmark of the two-phase-commit coordinator against the idempotent upsert sink.

The implementation is :mod:`kafka_share_eos.proving_ground.bench.two_phase`, also run by
``kafka-share-eos bench``; ``--help`` lists the sizes this script takes.
"""

from kafka_share_eos.proving_ground.bench.two_phase import main

if __name__ == "__main__":
    main()
