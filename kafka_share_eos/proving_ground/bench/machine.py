"""The machine a benchmark ran on: numbers mean little without it."""

from __future__ import annotations

import os
import platform
from importlib import metadata
from pathlib import Path

from kafka_share_eos._libs import sa


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory() -> str:
    try:
        pages, page_size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return "unknown"
    return f"{pages * page_size / 2**30:.1f} GiB"


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"


def _librdkafka() -> str:
    import confluent_kafka

    return str(confluent_kafka.libversion()[0])


def postgres_version(url: str) -> str:
    """The server version behind the SQLAlchemy ``url``."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return str(conn.execute(sa.text("SHOW server_version")).scalar_one())
    finally:
        engine.dispose()


def machine_details(postgres: str | None = None) -> dict[str, str]:
    """CPU, memory and the versions of everything the benchmarks measure through."""
    return {
        "cpus": str(os.cpu_count() or "unknown"),
        "cpu model": _cpu_model(),
        "memory": _memory(),
        "os": platform.platform(terse=True),
        "python": platform.python_version(),
        "spark": _version("pyspark"),
        "librdkafka": _librdkafka(),
        "deltalake": _version("deltalake"),
        "postgres": postgres or "not used",
    }
