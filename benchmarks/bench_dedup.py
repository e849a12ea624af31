"""Benchmark of the checkpoint-dedup store against ledger size and a plain append.

The implementation is :mod:`kafka_share_eos.proving_ground.bench.dedup`, also run by
``kafka-share-eos bench``; ``--help`` lists the sizes this script takes.
"""

from kafka_share_eos.proving_ground.bench.dedup import main

if __name__ == "__main__":
    main()
