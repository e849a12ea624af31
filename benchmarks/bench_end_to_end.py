"""Benchmark of whole pipelines, each strategy exactly once against the same pipeline at least
once, and the runner's and driver's resident memory over a long run.

The implementation is :mod:`kafka_share_eos.proving_ground.bench.end_to_end`, also run by
``kafka-share-eos bench``; ``--help`` lists the sizes this script takes.
"""

from kafka_share_eos.proving_ground.bench.end_to_end import main

if __name__ == "__main__":
    main()
