"""Fetching delta-spark's jars once: the log goes under the user's cache directory, a failed or
timed-out fetch prints its reason, where the log is and the log's end, and without delta-spark
the fetch names the extra to install. In the delta-spark tier the fetch loads the jars and
prints nothing."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_share_eos.deltaspark import prefetch

pytestmark = pytest.mark.timeout(120)

# What `pip install delta-spark` would make importable and findable, without its code: enough
# for this process to name the jars, while the child the fetch starts does not see it.
STUB_VERSION = "4.4.0"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache directory of the test's own (``XDG_CACHE_HOME``), argv without options, and a
    working directory of its own."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(sys, "argv", ["prefetch"])
    # The fetch's child runs in the working directory: one without packages of its own.
    monkeypatch.chdir(tmp_path)
    return tmp_path / "cache"


@pytest.fixture
def delta_spark_in_this_process_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    site = tmp_path / "site"
    (site / "delta").mkdir(parents=True)
    (site / "delta" / "__init__.py").write_text("")
    dist_info = site / f"delta_spark-{STUB_VERSION}.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: delta-spark\nVersion: {STUB_VERSION}\n")
    monkeypatch.syspath_prepend(str(site))
    yield
    sys.modules.pop("delta", None)


def test_the_log_goes_under_the_cache_directory_the_environment_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert prefetch.log_path() == tmp_path / "xdg" / "kafka-share-eos" / "delta-spark-prefetch.log"

    monkeypatch.setenv("XDG_CACHE_HOME", "")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert prefetch.log_path() == (
        tmp_path / "home" / ".cache" / "kafka-share-eos" / "delta-spark-prefetch.log")


def test_without_delta_spark_the_fetch_names_the_extra_to_install(cache: Path) -> None:
    # A process of its own: tests/ is on this one's path, and tests/delta would pass for the
    # `delta` package there.
    fetch = subprocess.run([sys.executable, "-m", "kafka_share_eos.deltaspark.prefetch"],
                           capture_output=True, text=True, timeout=60, check=False)

    assert fetch.returncode == 1
    assert fetch.stderr.splitlines()[-1] == (
        "kafka_share_eos.errors.MissingExtraError: delta is not installed (used by "
        "with_delta_spark): pip install 'kafka-share-eos[delta-spark]'")
    assert not (cache / "kafka-share-eos").exists()


@pytest.mark.usefixtures("delta_spark_in_this_process_only")
def test_a_failed_fetch_prints_its_reason_the_log_and_the_logs_end(
    cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The child cannot import delta-spark: its session fails before Spark starts.
    assert prefetch.main() == 1

    log = cache / "kafka-share-eos" / "delta-spark-prefetch.log"
    err = capsys.readouterr().err.splitlines()
    assert err[0] == (
        f"fetching io.delta:delta-spark_{_spark_line()}_2.13:{STUB_VERSION} for delta-spark "
        "failed: ModuleNotFoundError: No module named 'delta'")
    assert err[1] == f"(log: {log})"
    logged = log.read_text().splitlines()
    assert err[2:] == logged[-40:]
    assert "kafka_share_eos.errors.MissingExtraError" in logged[-1]


@pytest.mark.usefixtures("delta_spark_in_this_process_only")
def test_a_fetch_that_outlives_its_time_is_stopped_and_said_to_have_timed_out(
    cache: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(prefetch, "TIMEOUT_S", 0.01)

    assert prefetch.main() == 1

    err = capsys.readouterr().err.splitlines()
    assert err[0].endswith("for delta-spark failed: timed out after 0 s")
    assert err[1] == f"(log: {cache / 'kafka-share-eos' / 'delta-spark-prefetch.log'})"


def test_a_log_without_a_known_failure_word_points_to_the_log() -> None:
    assert prefetch._reason(["resolving", "  :: unresolved dependency: io.delta#x;1", "Error: y"]) \
        == ":: unresolved dependency: io.delta#x;1"
    assert prefetch._reason(["resolving", "done"]) == "see the log"


@pytest.mark.delta_spark
@pytest.mark.spark
@pytest.mark.timeout(900)
def test_in_the_tier_the_jars_load_and_nothing_is_printed(
    cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert prefetch.main() == 0

    assert capsys.readouterr().err == ""
    assert (cache / "kafka-share-eos" / "delta-spark-prefetch.log").exists()


def _spark_line() -> str:
    import pyspark

    return ".".join(pyspark.__version__.split(".")[:2])
