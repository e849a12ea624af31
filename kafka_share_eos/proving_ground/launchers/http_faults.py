"""An HTTP front that answers chosen requests with ``503 SlowDown`` or ``500 InternalError``, as
a throttled or failing object store does: mitmproxy's ``mitmdump`` in reverse-proxy mode with
an addon of the suite's.

Toxiproxy works on TCP and cannot answer with an HTTP status, and the suite's S3 server
(SeaweedFS) has no switch that makes it fail requests, so the statuses come from mitmproxy, the
maintained HTTP proxy whose addon API is made for rewriting flows. It lives in a virtual
environment of its own, built once per version and Python with pip from the package index into
``$XDG_CACHE_HOME/kafka-share-eos/mitmproxy-<version>-py<X.Y>`` (``~/.cache`` by default): its
exact pins of cryptography and friends stay out of the toolkit's environment. The pinned 11.0.2
is the newest release for Python 3.11 (12.x needs 3.12; ``KSE_MITMPROXY_VERSION`` picks one).

:class:`HttpFaults` forwards every request to its upstream (the ``Host`` header kept, so a
request signed for the front's address with AWS Signature Version 4 passes the store's check)
until :meth:`HttpFaults.fail` names a status, which requests (``"writes"``: ``PUT``, ``POST``,
``DELETE``; ``"reads"``: ``GET``, ``HEAD``; ``"all"``), what share of them (every other one at
0.5, spread evenly rather than drawn at random, so a run repeats) and how many at most. The
failed requests never reach the store. :meth:`HttpFaults.heal` forwards everything again.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Literal

from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.proving_ground.errors import ObjectStoreServerError
from kafka_share_eos.proving_ground.launchers import local_server
from kafka_share_eos.proving_ground.launchers.cache import CachedProgram
from kafka_share_eos.proving_ground.launchers.local_server import LocalServer

__all__ = ["HttpFaults", "Requests", "mitmdump_binary"]

MITMPROXY_VERSION_ENV = "KSE_MITMPROXY_VERSION"
"""Environment variable that picks another mitmproxy release than the pinned one."""
BUILD_TIMEOUT_S = 900.0
START_TIMEOUT_S = 60.0
CONTROL_PATH = "/_faults"
"""Where the addon takes its rules: no S3 bucket's name starts with ``_``."""

Requests = Literal["writes", "reads", "all"]
_METHODS: dict[str, list[str]] = {
    "writes": ["PUT", "POST", "DELETE", "PATCH"], "reads": ["GET", "HEAD"],
    "all": ["PUT", "POST", "DELETE", "PATCH", "GET", "HEAD"],
}

_MITMPROXY = CachedProgram("mitmproxy", "11.0.2", MITMPROXY_VERSION_ENV)

# The addon runs inside mitmdump's own environment, so it is kept as text and written beside the
# server's log at start. mitmproxy calls hooks on one event loop: no locking is needed.
_ADDON = '''
import json

from mitmproxy import http

ERRORS = {
    500: ("InternalError", "We encountered an internal error. Please try again."),
    503: ("SlowDown", "Please reduce your request rate."),
}


class Faults:
    def __init__(self):
        self.rule = None
        self.matched = 0
        self.answered = 0

    def request(self, flow):
        if flow.request.path.split("?")[0] == "CONTROL_PATH":
            self.control(flow)
        elif self.strikes(flow.request):
            status = self.rule["status"]
            code, message = ERRORS.get(status, ("ServiceUnavailable", "Injected fault."))
            body = b"" if flow.request.method == "HEAD" else (
                "<?xml version=\\"1.0\\" encoding=\\"UTF-8\\"?>"
                f"<Error><Code>{code}</Code><Message>{message}</Message>"
                f"<Resource>{flow.request.path}</Resource></Error>").encode()
            flow.response = http.Response.make(status, body, {"Content-Type": "application/xml"})

    def strikes(self, request):
        rule = self.rule
        if rule is None or request.method not in rule["methods"]:
            return False
        if not request.path.startswith(rule["path"]):
            return False
        index, self.matched = self.matched, self.matched + 1
        if rule["count"] is not None and self.answered >= rule["count"]:
            return False
        if int((index + 1) * rule["share"]) <= int(index * rule["share"]):
            return False
        self.answered += 1
        return True

    def control(self, flow):
        if flow.request.method == "PUT":
            self.rule = json.loads(flow.request.content)
            self.matched = self.answered = 0
        elif flow.request.method == "DELETE":
            self.rule = None
        state = {"rule": self.rule, "matched": self.matched, "answered": self.answered}
        flow.response = http.Response.make(200, json.dumps(state),
                                           {"Content-Type": "application/json"})


addons = [Faults()]
'''.replace("CONTROL_PATH", CONTROL_PATH)


def mitmdump_binary(version: str | None = None) -> Path:
    """``mitmdump`` of mitmproxy ``version`` (default: the pinned one) in its environment, built
    with pip if missing.

    Raises:
        ObjectStoreServerError: pip could not build the environment (its output's end says why).
    """
    version = version or _MITMPROXY.version()
    key = f"{version}-py{sys.version_info.major}.{sys.version_info.minor}"
    return _MITMPROXY.fetched(key, lambda _key, target: _build(version, target)) / "venv" / \
        "bin" / "mitmdump"


def _build(version: str, target: Path) -> None:
    local_server.notice(f"installing mitmproxy {version} with pip into {target} (once)")
    venv = target / "venv"
    for step in (
        [sys.executable, "-m", "venv", "--clear", str(venv)],
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
         "--disable-pip-version-check", f"mitmproxy=={version}"],
    ):
        done = local_server.run_tool(step, what=f"installing mitmproxy {version}",
                                     timeout_s=BUILD_TIMEOUT_S)
        if done.returncode != 0:
            raise ObjectStoreServerError(
                f"installing mitmproxy {version} into {venv} failed: "
                f"{(done.stdout + done.stderr)[-2000:]}")


def _control(url: str, method: str, rule: dict[str, Any] | None = None) -> dict[str, Any]:
    return dict(local_server.json_call("the HTTP fault front", url, method, rule) or {})


class HttpFaults(LocalServer):
    """mitmproxy in front of ``upstream`` (``http://host:port``) on a free port of 127.0.0.1,
    answering the requests :meth:`fail` chooses with an S3 error instead of forwarding them: a
    context manager whose :attr:`endpoint` clients use in place of the upstream's.

    Args:
        upstream: the server behind the front, ``http://host:port``.
        version: the mitmproxy release (default: the pinned one).
    """

    def __init__(self, upstream: str, *, version: str | None = None) -> None:
        super().__init__("mitmproxy", _MITMPROXY, version, ports=1, client_port=0,
                         port_taken=("address already in use",),
                         start_timeout_s=START_TIMEOUT_S, awaited="answer on its port")
        self.upstream = upstream.rstrip("/")

    @property
    def endpoint(self) -> str:
        """``http://127.0.0.1:<port>``, where clients send their requests."""
        return f"http://127.0.0.1:{self._running_port()}"

    def fail(self, status: int = 503, *, requests: Requests = "all", share: float = 1.0,
             count: int | None = None, path: str = "/") -> None:
        """Answer ``status`` (503: ``SlowDown``, 500: ``InternalError``) to a ``share`` of the
        ``requests`` whose path starts with ``path`` (``/<bucket>/<prefix>``), spread evenly,
        at most ``count`` of them (None: until :meth:`heal`); the counts start again.

        Raises:
            ConfigurationError: a status that is no error, a share outside (0, 1], a negative
                count, or ``requests`` none of ``"writes"``, ``"reads"``, ``"all"``.
        """
        if not 400 <= status <= 599 or not 0 < share <= 1 or (count is not None and count < 0):
            raise ConfigurationError(
                f"an HTTP fault needs an error status, a share in (0, 1] and a count of 0 or "
                f"more; got status {status}, share {share}, count {count}")
        if requests not in _METHODS:
            raise ConfigurationError(
                f"requests must be one of {', '.join(map(repr, _METHODS))}, got {requests!r}")
        _control(self._control_url, "PUT", {"status": status, "methods": _METHODS[requests],
                                            "share": share, "count": count, "path": path})

    def heal(self) -> None:
        """Forward every request again."""
        _control(self._control_url, "DELETE")

    @property
    def answered(self) -> int:
        """How many requests got the status since :meth:`fail`."""
        return int(_control(self._control_url, "GET")["answered"])

    @property
    def matched(self) -> int:
        """How many requests :meth:`fail`'s rule chose from (answered or let through)."""
        return int(_control(self._control_url, "GET")["matched"])

    @property
    def _control_url(self) -> str:
        return self.endpoint + CONTROL_PATH

    # -- internals ----------------------------------------------------------------------------

    def _program(self) -> list[str]:
        return [str(mitmdump_binary(self.version))]

    def _command(self, program: list[str], work: Path, ports: list[int]
                 ) -> tuple[list[str], None]:
        addon = work / "http_faults_addon.py"
        addon.write_text(_ADDON)
        return [*program, "--mode", f"reverse:{self.upstream}", "--listen-host", "127.0.0.1",
                "--listen-port", str(ports[0]), "--set", f"confdir={work / 'conf'}",
                "--set", "keep_host_header=true", "--set", "flow_detail=0",
                "--set", "termlog_verbosity=warn", "-s", str(addon)], None

    def _ready(self, port: int) -> bool:
        try:
            _control(f"http://127.0.0.1:{port}{CONTROL_PATH}", "GET")
        except ObjectStoreServerError:
            return False
        return True


def main() -> None:
    """``python -m kafka_share_eos.proving_ground.launchers.http_faults``: install mitmproxy
    now (the test command does, so that a failed install fails it at once with pip's reason);
    silent when it is there."""
    local_server.prefetch(mitmdump_binary)


if __name__ == "__main__":
    main()
