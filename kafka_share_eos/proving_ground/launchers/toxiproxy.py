"""Toxiproxy, Shopify's TCP fault proxy, built once from the Go module proxy, for network faults.

A network partition needs no root here: a client reaches a server only through a proxy of
:class:`Toxiproxy` on loopback, and the test breaks the proxy. ``toxiproxy-server`` publishes no
package to a registry the suite uses, so :func:`toxiproxy_binary` builds it once with ``go
install`` into ``$XDG_CACHE_HOME/kafka-share-eos/toxiproxy-<version>`` (``~/.cache`` by default;
about 20 s of Go's time). The server is driven through its JSON REST API with ``urllib``:
``toxiproxy-python``, the only Python client on the package index, had its last release in 2019,
and the API is a handful of calls.

A :class:`Proxy` takes Toxiproxy's toxics (:meth:`Proxy.add_toxic`: ``latency``, ``timeout``,
``reset_peer``, ``bandwidth``, ``limit_data``, ``slicer``, ``slow_close``) and three cuts made
of them (:meth:`Proxy.cut`):

- ``"blackhole"``: nothing passes either way, connections stay open and new ones are accepted,
  as when a switch drops every packet. What is sent meanwhile is held (a ``latency`` toxic
  longer than any test, each way), not thrown away: after a real partition TCP retransmits what
  was lost and the stream resumes intact, and so does a healed blackhole. Toxiproxy's
  ``timeout`` toxic would drop the bytes and close every connection at the heal, which no
  partition shorter than TCP's retry limit does.
- ``"refuse"``: the proxy is disabled: every connection is closed and new ones are refused, as
  when a firewall rejects the path or the server's host is gone.
- ``"lose_replies"``: what the client sends still reaches the server, but the server's next
  answer on each connection is thrown away and the connection closed (a ``reset_peer`` toxic
  downstream), as when the path fails right after a request left. The server acted on the
  request (a ``COMMIT``, say); the client gets a connection error and cannot tell whether it
  did.

:meth:`Proxy.heal` removes every toxic and enables the proxy again.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.proving_ground.errors import ObjectStoreServerError
from kafka_share_eos.proving_ground.launchers import local_server
from kafka_share_eos.proving_ground.launchers.cache import CachedProgram
from kafka_share_eos.proving_ground.launchers.local_server import LocalServer

__all__ = ["CutMode", "Proxy", "Toxiproxy", "toxiproxy_binary", "toxiproxy_version"]

TOXIPROXY_PACKAGE = "github.com/Shopify/toxiproxy/v2/cmd/server"
TOXIPROXY_VERSION = "v2.12.0"
"""The newest release the Go module proxy serves (2025-03)."""
TOXIPROXY_VERSION_ENV = "KSE_TOXIPROXY_VERSION"
"""Environment variable that picks another module version of Toxiproxy."""
BUILD_TIMEOUT_S = 900.0
START_TIMEOUT_S = 30.0
HOLD_MS = 24 * 3600 * 1000
"""The latency of a blackhole: longer than any test, so nothing passes until the heal."""

CutMode = Literal["blackhole", "refuse", "lose_replies"]
_CUT_MODES = ("blackhole", "refuse", "lose_replies")
Stream = Literal["upstream", "downstream"]

_TOXIPROXY = CachedProgram("toxiproxy", TOXIPROXY_VERSION, TOXIPROXY_VERSION_ENV)

toxiproxy_version = _TOXIPROXY.version
"""The Toxiproxy module version to run: ``KSE_TOXIPROXY_VERSION`` or the pinned one."""


def toxiproxy_binary(version: str | None = None) -> Path:
    """The ``toxiproxy-server`` binary of ``version`` (default :func:`toxiproxy_version`), built
    if missing.

    Raises:
        ObjectStoreServerError: Go is missing, or the download or the build failed.
    """
    return _TOXIPROXY.fetched(version, _build) / "toxiproxy-server"


def _build(version: str, target: Path) -> None:
    local_server.go_install(TOXIPROXY_PACKAGE, version, target, name="Toxiproxy",
                            timeout_s=BUILD_TIMEOUT_S)
    (target / "server").replace(target / "toxiproxy-server")


def _call(url: str, method: str = "GET", body: dict[str, Any] | None = None) -> Any:
    return local_server.json_call("Toxiproxy", url, method, body)


@dataclass(frozen=True)
class Proxy:
    """One proxy of a :class:`Toxiproxy` server: ``127.0.0.1:<port>`` forwarded to ``upstream``
    while enabled and free of toxics."""

    api: str
    """The server's API, ``http://127.0.0.1:<port>``."""
    name: str
    port: int
    """Where clients connect; it stays the proxy's across :meth:`disable` and :meth:`enable`."""
    upstream: str
    """``host:port`` the connections are forwarded to."""

    @property
    def address(self) -> str:
        """``127.0.0.1:<port>``, where clients connect."""
        return f"127.0.0.1:{self.port}"

    @property
    def _url(self) -> str:
        return f"{self.api}/proxies/{self.name}"

    def add_toxic(self, kind: str, *, stream: Stream = "downstream", name: str | None = None,
                  toxicity: float = 1.0, **attributes: int) -> str:
        """Add a toxic of Toxiproxy's ``kind`` (``"latency"``, ``"timeout"``,
        ``"reset_peer"``, ``"bandwidth"``, ``"limit_data"``, ``"slicer"``, ``"slow_close"``) with
        its ``attributes`` (``latency=`` ms, ``timeout=`` ms, ``rate=`` KB/s, ``bytes=``, ...)
        to the bytes flowing ``stream`` (``"downstream"``: from the server to the client), on a
        share ``toxicity`` of the connections; its name (default ``<kind>_<stream>``).

        Raises:
            ObjectStoreServerError: Toxiproxy refused it (an unknown kind, a name taken).
        """
        toxic = {"name": name or f"{kind}_{stream}", "type": kind, "stream": stream,
                 "toxicity": toxicity, "attributes": attributes}
        return str(_call(f"{self._url}/toxics", "POST", toxic)["name"])

    def remove_toxic(self, name: str) -> None:
        """Remove the toxic ``name``: what a ``latency`` toxic held goes on."""
        _call(f"{self._url}/toxics/{name}", "DELETE")

    def toxics(self) -> list[str]:
        """The names of the proxy's toxics."""
        return [str(toxic["name"]) for toxic in _call(f"{self._url}/toxics")]

    @property
    def enabled(self) -> bool:
        """Whether the proxy listens and forwards."""
        return bool(_call(self._url)["enabled"])

    def disable(self) -> None:
        """Close every connection and stop listening: new connections are refused."""
        _call(self._url, "POST", {"enabled": False})

    def enable(self) -> None:
        """Listen on :attr:`port` again."""
        _call(self._url, "POST", {"enabled": True})

    def cut(self, mode: CutMode = "blackhole") -> None:
        """Cut the path: ``"blackhole"`` holds every byte, ``"refuse"`` closes every
        connection and refuses new ones, ``"lose_replies"`` lets requests through and closes
        each connection at the server's next answer, thrown away (see the module's
        description).

        Raises:
            ConfigurationError: ``mode`` is none of these.
        """
        if mode == "blackhole":
            for stream in ("upstream", "downstream"):
                self.add_toxic("latency", stream=stream, name=f"blackhole_{stream}",
                               latency=HOLD_MS)
        elif mode == "refuse":
            self.disable()
        elif mode == "lose_replies":
            self.add_toxic("reset_peer", stream="downstream", name="lose_replies", timeout=0)
        else:
            raise ConfigurationError(
                f"cut mode must be one of {', '.join(map(repr, _CUT_MODES))}, got {mode!r}")

    def delete(self) -> None:
        """Close every connection and remove the proxy from the server."""
        _call(self._url, "DELETE")

    def heal(self) -> None:
        """Remove every toxic and enable the proxy: bytes a blackhole held go on."""
        for toxic in self.toxics():
            self.remove_toxic(toxic)
        if not self.enabled:
            self.enable()


class Toxiproxy(LocalServer):
    """``toxiproxy-server`` with its API on a free port of 127.0.0.1: a context manager whose
    :meth:`proxy` makes the proxies (each on a port of its own), which end with it or with
    :meth:`Proxy.delete`.

    Args:
        version: the Toxiproxy module version (default :func:`toxiproxy_version`).
    """

    def __init__(self, *, version: str | None = None) -> None:
        super().__init__("Toxiproxy", _TOXIPROXY, version, ports=1, client_port=0,
                         port_taken=("address already in use",),
                         start_timeout_s=START_TIMEOUT_S, awaited="answer on its API")
        self._made = 0

    @property
    def api(self) -> str:
        """The server's REST API, ``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self._running_port()}"

    def proxy(self, upstream: str, *, port: int = 0, name: str | None = None) -> Proxy:
        """A new enabled proxy forwarding ``127.0.0.1:<port>`` (0: a free one) to
        ``upstream`` (``host:port``).

        Raises:
            ObjectStoreServerError: Toxiproxy refused it (the port is taken, the name too).
        """
        self._made += 1
        made = _call(f"{self.api}/proxies", "POST", {
            "name": name or f"proxy-{self._made}", "listen": f"127.0.0.1:{port}",
            "upstream": upstream, "enabled": True})
        return Proxy(self.api, str(made["name"]), int(str(made["listen"]).rsplit(":", 1)[1]),
                     str(made["upstream"]))

    # -- internals ----------------------------------------------------------------------------

    def _program(self) -> list[str]:
        return [str(toxiproxy_binary(self.version))]

    def _command(self, program: list[str], work: Path, ports: list[int]
                 ) -> tuple[list[str], None]:
        return [*program, "-host", "127.0.0.1", "-port", str(ports[0])], None

    def _ready(self, port: int) -> bool:
        try:
            _call(f"http://127.0.0.1:{port}/version")
        except ObjectStoreServerError:
            return False
        return True


def main() -> None:
    """``python -m kafka_share_eos.proving_ground.launchers.toxiproxy``: build Toxiproxy now
    (the test command does, so that a failed build fails it at once with Go's reason); silent
    when it is there."""
    local_server.prefetch(toxiproxy_binary)


if __name__ == "__main__":
    main()
