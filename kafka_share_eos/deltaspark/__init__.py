"""Spark's own Delta (delta-spark): the session set-up, and the jar fetch of the test tier.

:func:`with_delta_spark` adds delta-spark's jars, SQL extension and catalog to a
``SparkSession.Builder``; ``python -m kafka_share_eos.deltaspark.prefetch`` resolves the jars
once, so later sessions start from Spark's package cache.
"""

from __future__ import annotations

from kafka_share_eos.deltaspark.spark_session import delta_spark_package, with_delta_spark

__all__ = ["delta_spark_package", "with_delta_spark"]
