"""Faster starts of local Spark JVMs: a class-data-sharing archive of the classes Spark loads.

A local Spark JVM spends most of its start-up loading and verifying thousands of classes from
Spark's jars. Java's dynamic class-data sharing (JDK 13+) maps them from an archive instead: one
warm-up process runs a small ``kafka-share`` query with ``-XX:ArchiveClassesAtExit`` and every
later JVM of the same Java and PySpark installation starts from that archive. The archive is
created once per installation under ``~/.cache/kafka-share-eos`` (``XDG_CACHE_HOME`` honoured);
a JVM that cannot use it warns (on stderr: a program's stdout stays its own) and loads classes as
usual.

The warm-up process is ``python -m kafka_share_eos.proving_ground.launchers.jvm_warm_up ARCHIVE``.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from kafka_share_eos._libs import pyspark

log = logging.getLogger("kafka_share_eos.proving_ground")

WARM_UP_TIMEOUT_S = 300.0
ARCHIVE_UNUSED_DAYS = 14.0

SHORT_LIVED_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
"""For JVMs that live seconds (crash-test pipelines): the quick compiler only and a one-thread
collector, which halve a start's CPU at the cost of peak speed in long runs."""

JVM_LOG_OPTIONS = ("-Xlog:disable", "-Xlog:all=warning:stderr")
"""The JVM's own warnings go to stderr instead of stdout, where ``--json`` output goes."""


def _java() -> Path | None:
    home = os.environ.get("JAVA_HOME")
    java = Path(home, "bin", "java") if home else None
    if java is None or not java.exists():
        found = shutil.which("java")
        java = Path(found) if found else None
    return java.resolve() if java is not None else None


def archive_path() -> Path | None:
    """Where the archive of this Java and PySpark installation lives (it may not exist yet);
    None when no ``java`` is found."""
    java = _java()
    if java is None:
        return None
    jars = Path(pyspark.__file__).resolve().parent / "jars"
    # The JVM refuses an archive once any jar on the classpath has another size or time than
    # when it was made, as after a reinstall into the same path: such jars need a new archive.
    stamps = sorted(f"{jar.name}:{stat.st_size}:{stat.st_mtime_ns}"
                    for jar in jars.glob("*.jar") for stat in [jar.stat()])
    identity = "\n".join([f"{java}:{java.stat().st_mtime_ns}:{jars}", *stamps])
    digest = hashlib.sha256(identity.encode()).hexdigest()[:16]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "kafka-share-eos" / f"spark-{pyspark.__version__}-{digest}.jsa"


def ensure_archive() -> Path | None:
    """The archive for this installation, created by a warm-up process if missing.

    Concurrent callers wait for one warm-up. Returns None when it cannot be made (the reason is
    logged once and kept next to the archive, so later starts do not retry in vain).
    """
    archive = archive_path()
    if archive is None:
        return None
    if archive.exists():
        with contextlib.suppress(OSError):  # a read-only cache still serves the archive
            os.utime(archive)  # in use: keeps it from being pruned
        return archive
    failed = archive.with_suffix(".failed")
    archive.parent.mkdir(parents=True, exist_ok=True)
    with open(archive.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if archive.exists():
            return archive
        if failed.exists():
            return None
        return _warm_up(archive, failed)


def _warm_up(archive: Path, failed: Path) -> Path | None:
    log.info("creating the Spark class archive %s (once per installation)", archive)
    partial = archive.with_name(f"{archive.name}.{os.getpid()}.partial")
    try:
        outcome = subprocess.run(
            [sys.executable, "-m", "kafka_share_eos.proving_ground.launchers.jvm_warm_up",
             str(partial)],
            capture_output=True,
            timeout=WARM_UP_TIMEOUT_S,
        )
        error = None if outcome.returncode == 0 and partial.exists() else outcome.stderr[-4000:]
    except subprocess.TimeoutExpired:
        error = b"the warm-up process did not finish within %d s" % WARM_UP_TIMEOUT_S
    if error is not None:
        partial.unlink(missing_ok=True)
        failed.write_bytes(error)
        log.warning("no Spark class archive, JVMs start the slow way: see %s", failed)
        return None
    partial.replace(archive)
    prune_archives(archive.parent)
    return archive


def prune_archives(cache: Path, unused_days: float = ARCHIVE_UNUSED_DAYS) -> list[Path]:
    """Delete the archives no JVM started from for ``unused_days``: those of replaced
    installations, 160 MB each, would otherwise pile up. Returns what was deleted."""
    cutoff = time.time() - unused_days * 86400
    stale = [archive for archive in cache.glob("spark-*.jsa") if archive.stat().st_mtime < cutoff]
    for archive in stale:
        archive.unlink(missing_ok=True)
        archive.with_suffix(".lock").unlink(missing_ok=True)
        archive.with_suffix(".failed").unlink(missing_ok=True)
    return stale


def java_options(short_lived: bool = False) -> list[str]:
    """JVM options for a local Spark driver: the class archive if there is one, and
    :data:`SHORT_LIVED_OPTIONS` when asked for."""
    archive = ensure_archive()
    options = [f"-XX:SharedArchiveFile={archive}"] if archive is not None else []
    return [*JVM_LOG_OPTIONS, *options, *(SHORT_LIVED_OPTIONS if short_lived else ())]


def fixed_heap_options(heap_mb: int) -> tuple[list[str], dict[str, str]]:
    """JVM options and Spark settings for a local driver that runs for hours: a heap of
    ``heap_mb`` MiB, committed and touched whole at the start, as long-running JVM services run
    theirs. Its resident memory then grows only outside the heap, and a JVM that keeps more
    live data than the heap holds fails with ``OutOfMemoryError`` instead of growing."""
    return ([*java_options(), f"-Xms{heap_mb}m", "-XX:+AlwaysPreTouch"],
            {"spark.driver.memory": f"{heap_mb}m"})


HEAP_USED = re.compile(r"heap\s+total \d+K, used (\d+)K")


def heap_live_mib(pid: int) -> float | None:
    """MiB of live objects on the heap of JVM ``pid``: its heap's use right after a full
    collection, which ``jcmd`` asks for (a pause of a fraction of a second). ``None`` when the
    JVM did not answer (gone, or not started from this Java)."""
    java = _java()
    if java is None:
        return None
    jcmd = str(java.with_name("jcmd"))
    try:
        subprocess.run([jcmd, str(pid), "GC.run"], capture_output=True, check=True, timeout=60)
        info = subprocess.run([jcmd, str(pid), "GC.heap_info"], capture_output=True, check=True,
                              timeout=60, text=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    used = HEAP_USED.search(info)
    return int(used.group(1)) / 1024 if used else None
