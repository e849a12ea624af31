"""Hadoop's ``s3a://`` filesystem for Spark, so that a query's checkpoint can live on S3.

PySpark ships Hadoop's client but not its S3 connector: ``hadoop-aws`` and the AWS SDK bundle it
needs (about 690 MB) come from Maven Central, fetched once into
``$XDG_CACHE_HOME/kafka-share-eos/hadoop-aws-<version>/libs``
(:mod:`~kafka_share_eos.proving_ground.launchers.cache`). The version is the one of the Hadoop
client inside PySpark, since the connector must match it.

:func:`s3a_spark_config` points s3a at the store an environment names (``AWS_ENDPOINT_URL``,
``AWS_REGION``) and takes the credentials from the environment at run time, so no key is ever
written into a Spark setting, a log or a file of the run.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from kafka_share_eos.proving_ground.errors import ObjectStoreServerError
from kafka_share_eos.proving_ground.launchers.cache import CachedProgram
from kafka_share_eos.proving_ground.launchers.maven import copy_dependencies
from kafka_share_eos.proving_ground.launchers.spark import jars_on_classpath

HADOOP_AWS_VERSION_ENV = "KSE_HADOOP_AWS_VERSION"
"""Environment variable that picks another ``hadoop-aws`` release than PySpark's Hadoop's."""

_ENVIRONMENT_CREDENTIALS = (
    "software.amazon.awssdk.auth.credentials.EnvironmentVariableCredentialsProvider"
)


def pyspark_hadoop_version() -> str:
    """The version of the Hadoop client PySpark ships (``hadoop-client-api-<version>.jar``).

    Raises:
        ObjectStoreServerError: PySpark's jars hold no Hadoop client.
    """
    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    for jar in jars.glob("hadoop-client-api-*.jar"):
        match = re.fullmatch(r"hadoop-client-api-(.+)\.jar", jar.name)
        if match:
            return match[1]
    raise ObjectStoreServerError(f"no hadoop-client-api jar in {jars}: cannot match hadoop-aws")


def s3a_jars(version: str | None = None) -> list[Path]:
    """Every jar s3a needs beside PySpark's own, fetched if missing.

    Raises:
        ObjectStoreServerError: Maven is missing or the fetch failed (the message says why).
    """
    program = CachedProgram("hadoop-aws", pyspark_hadoop_version(), HADOOP_AWS_VERSION_ENV)
    return sorted((program.fetched(version, _fetch) / "libs").glob("*.jar"))


def _fetch(version: str, target: Path) -> None:
    copy_dependencies([f"org.apache.hadoop:hadoop-aws:{version}"], target / "libs",
                      what=f"hadoop-aws {version}", error=ObjectStoreServerError)


def s3a_spark_config(environment: Mapping[str, str]) -> dict[str, str]:
    """Spark settings that add s3a and point it at the S3 endpoint ``environment`` names (its
    ``AWS_ENDPOINT_URL``, Amazon's own when absent), with path-style requests, TLS as the
    endpoint's scheme says, and credentials read from the process environment.

    Raises:
        ObjectStoreServerError: the jars cannot be fetched.
    """
    config = {
        **jars_on_classpath(s3a_jars()),
        "spark.hadoop.fs.s3a.aws.credentials.provider": _ENVIRONMENT_CREDENTIALS,
    }
    endpoint = environment.get("AWS_ENDPOINT_URL")
    if endpoint:
        config |= {
            "spark.hadoop.fs.s3a.endpoint": endpoint,
            "spark.hadoop.fs.s3a.path.style.access": "true",
            "spark.hadoop.fs.s3a.connection.ssl.enabled": str(
                urlsplit(endpoint).scheme == "https").lower(),
        }
    region = environment.get("AWS_REGION") or environment.get("AWS_DEFAULT_REGION")
    if region:
        config["spark.hadoop.fs.s3a.endpoint.region"] = region
    return config


def main() -> None:
    """``python -m kafka_share_eos.proving_ground.launchers.hadoop_aws``: fetch the jars now;
    silent when they are there."""
    from kafka_share_eos.proving_ground.launchers.local_server import prefetch

    prefetch(s3a_jars)


if __name__ == "__main__":
    main()
