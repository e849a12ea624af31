"""A Prometheus server on loopback for tests: Debian's ``prometheus`` package, fetched once.

The tests prove the metrics endpoint against the real scraper and its query language, and the
alert rules shipped in docs/prometheus/ against the real rule evaluator and ``promtool``.
Debian packages Prometheus (2.42 on bookworm) as a self-contained Go binary, so the launcher
does not install it: ``apt-get download`` fetches the ``.deb`` and ``dpkg-deb -x`` unpacks it
into ``$XDG_CACHE_HOME/kafka-share-eos/prometheus-<version>`` (``~/.cache`` by default, outside
any repository). A machine whose apt lists are missing gets them with ``apt-get update`` into a
private directory of the cache, leaving the system's own lists alone.

The server runs on a free port of 127.0.0.1 with its data in a temporary directory removed at
stop, scraping the targets it was given every :data:`SCRAPE_INTERVAL` and evaluating its rule
files as often.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kafka_share_eos.proving_ground.errors import ObjectStoreServerError
from kafka_share_eos.proving_ground.launchers import local_server
from kafka_share_eos.proving_ground.launchers.cache import CachedProgram
from kafka_share_eos.proving_ground.launchers.local_server import LocalServer

PROMETHEUS_VERSION = "2.42.0+ds-5+deb12u1"
"""The Debian package version the launcher fetches unless told otherwise (bookworm's)."""

PROMETHEUS_VERSION_ENV = "KSE_PROMETHEUS_VERSION"
"""Environment variable that picks another version of Debian's ``prometheus`` package."""

SCRAPE_INTERVAL = "1s"
FETCH_TIMEOUT_S = 600.0
START_TIMEOUT_S = 60.0

_PROMETHEUS = CachedProgram("prometheus", PROMETHEUS_VERSION, PROMETHEUS_VERSION_ENV)


def binaries(version: str | None = None) -> Path:
    """The directory holding ``prometheus`` and ``promtool`` of ``version`` (default: the
    pinned one or ``KSE_PROMETHEUS_VERSION``), fetched if missing.

    Raises:
        ObjectStoreServerError: apt or dpkg-deb is missing, or the download failed.
    """
    return _PROMETHEUS.fetched(version, _fetch) / "usr" / "bin"


def _fetch(version: str, target: Path) -> None:
    apt, dpkg_deb = shutil.which("apt-get"), shutil.which("dpkg-deb")
    if apt is None or dpkg_deb is None:
        raise ObjectStoreServerError(
            "fetching Prometheus needs Debian's apt-get and dpkg-deb (or a Prometheus 2.x in "
            f"{target / 'usr' / 'bin'})"
        )
    local_server.notice(f"fetching Debian's prometheus {version} into {target} (once)")
    with tempfile.TemporaryDirectory(prefix="kse-prometheus-") as download:
        package = [apt, "download", f"prometheus={version}"]
        if _apt(package, cwd=Path(download)) is not None:
            # No list names the package here: read the lists into the cache, not the system's.
            lists = target / "apt-lists"
            (lists / "partial").mkdir(parents=True, exist_ok=True)
            private = [f"-o=Dir::State::Lists={lists}"]
            failed = (_apt([apt, *private, "update"], cwd=Path(download))
                      or _apt([*package[:1], *private, *package[1:]], cwd=Path(download)))
            if failed is not None:
                raise ObjectStoreServerError(f"apt-get could not fetch prometheus: {failed}")
        deb = next(Path(download).glob("prometheus_*.deb"))
        unpacked = _apt([dpkg_deb, "-x", str(deb), str(target)], cwd=Path(download))
        if unpacked is not None:
            raise ObjectStoreServerError(f"dpkg-deb could not unpack {deb.name}: {unpacked}")


def _apt(command: list[str], cwd: Path) -> str | None:
    """Run an apt or dpkg step; None when it worked, else the end of what it said."""
    outcome = local_server.run_tool(command, what=" ".join(command[:2]),
                                    timeout_s=FETCH_TIMEOUT_S, cwd=cwd)
    if outcome.returncode == 0:
        return None
    return (outcome.stderr or outcome.stdout).strip()[-1000:] or f"exit {outcome.returncode}"


class PrometheusServer(LocalServer):
    """Prometheus on a free port of 127.0.0.1 scraping ``targets`` every second, with
    ``rule_files`` evaluated as often; a context manager (``with PrometheusServer([...]) as
    prometheus:``) whose :meth:`query` and :meth:`alerts` read its HTTP API.

    Args:
        targets: ``host:port`` of each endpoint to scrape (path ``/metrics``).
        rule_files: alerting or recording rule files to load.
        version: the Debian package version (default :data:`PROMETHEUS_VERSION`).
    """

    def __init__(self, targets: Sequence[str], rule_files: Sequence[Path] = (), *,
                 version: str | None = None) -> None:
        super().__init__("Prometheus", _PROMETHEUS, version, ports=1, client_port=0,
                         port_taken=("address already in use",), start_timeout_s=START_TIMEOUT_S,
                         awaited="answer /-/ready")
        self.targets = list(targets)
        self.rule_files = [Path(path).resolve() for path in rule_files]

    @property
    def url(self) -> str:
        """The server's base URL, ``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self._running_port()}"

    def query(self, promql: str) -> list[dict[str, Any]]:
        """The result vector of an instant query (``/api/v1/query``)."""
        data = self._api("query?" + urllib.parse.urlencode({"query": promql}))
        result: list[dict[str, Any]] = data["result"]
        return result

    def query_range(self, promql: str, start: float, end: float) -> list[dict[str, Any]]:
        """The result matrix of a range query (``/api/v1/query_range``), a point a second from
        ``start`` to ``end`` (Unix seconds)."""
        data = self._api("query_range?" + urllib.parse.urlencode(
            {"query": promql, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": "1"}),
            timeout_s=30)
        result: list[dict[str, Any]] = data["result"]
        return result

    def alerts(self) -> list[dict[str, Any]]:
        """The alerts pending or firing now (``/api/v1/alerts``)."""
        alerts: list[dict[str, Any]] = self._api("alerts")["alerts"]
        return alerts

    def wait_for(self, what: str, read: Callable[[], Any], *, timeout_s: float = 60.0) -> Any:
        """Poll ``read()`` until it returns something true, and return that.

        Raises:
            ObjectStoreServerError: it did not within ``timeout_s`` (``what`` says what was
                awaited; the message ends with the last value read).
        """
        deadline = time.monotonic() + timeout_s
        while True:
            value = read()
            if value:
                return value
            if time.monotonic() > deadline:
                raise ObjectStoreServerError(
                    f"Prometheus did not show {what} within {timeout_s:.0f} s (last: {value!r})")
            time.sleep(0.2)

    def _api(self, path: str, timeout_s: float = 10) -> dict[str, Any]:
        with urllib.request.urlopen(f"{self.url}/api/v1/{path}", timeout=timeout_s) as response:
            body = json.load(response)
        if body.get("status") != "success":
            raise ObjectStoreServerError(f"Prometheus refused /api/v1/{path}: {body}")
        data: dict[str, Any] = body["data"]
        return data

    # -- internals ----------------------------------------------------------------------------

    def _program(self) -> list[str]:
        return [str(binaries(self.version) / "prometheus")]

    def _command(self, program: list[str], work: Path, ports: list[int]
                 ) -> tuple[list[str], None]:
        config = {
            "global": {"scrape_interval": SCRAPE_INTERVAL,
                       "evaluation_interval": SCRAPE_INTERVAL},
            "rule_files": [str(path) for path in self.rule_files],
            "scrape_configs": [{"job_name": "kafka-share-eos",
                                "static_configs": [{"targets": self.targets}]}],
        }
        # YAML is a superset of JSON: no YAML library needed.
        (work / "prometheus.yml").write_text(json.dumps(config))
        return [*program, f"--config.file={work / 'prometheus.yml'}",
                f"--storage.tsdb.path={work / 'data'}",
                f"--web.listen-address=127.0.0.1:{ports[0]}"], None

    def _ready(self, port: int) -> bool:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/-/ready", timeout=5).close()
        except (urllib.error.URLError, OSError):
            return False
        return True


def promtool(version: str | None = None) -> Path:
    """Prometheus's ``promtool`` of ``version``, fetched if missing."""
    return binaries(version) / "promtool"


def main() -> None:
    """``python -m kafka_share_eos.proving_ground.launchers.prometheus``: fetch Prometheus now;
    silent when it is there."""
    local_server.prefetch(binaries)


if __name__ == "__main__":
    main()
