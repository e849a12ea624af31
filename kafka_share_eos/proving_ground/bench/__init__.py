"""Benchmarks of the source and the strategies, each against a baseline measured in the same run.

Every module has ``run(...) -> dict`` returning its numbers and a ``main()`` for the scripts in
``benchmarks/``; :mod:`kafka_share_eos.proving_ground.bench.suite` runs them all for
``kafka-share-eos bench``. Throughput is only ever compared as ratios of two measurements taken side
by side on one machine.
"""
