"""A TCP forwarder the tests own, to cut a client off from a server and heal the cut.

A network partition needs no root here: the client reaches the server only through a
:class:`TcpProxy` on loopback, and the test cuts the proxy. Three kinds of cut:

- ``"blackhole"``: nothing passes either way, connections stay open and new ones are accepted
  but not forwarded, as when a switch drops every packet. Bytes sent meanwhile are held, not
  thrown away: after a real partition TCP retransmits what was lost and the stream resumes
  intact (unless one end gave up meanwhile), and so does a healed blackhole. Dropping them
  would corrupt the Kafka protocol stream, which no partition does.
- ``"reset"``: every connection is closed with a TCP RST (``SO_LINGER`` 0) on both sides and
  new ones are refused the same way, as when a firewall rejects the path.
- ``"lose_replies"``: what the client sends still reaches the server, but the server's next
  answer on each connection is thrown away and that connection reset, as when the path fails
  right after a request left. The server acted on the request (a ``COMMIT``, say); the client
  gets a connection error and cannot tell whether it did. :attr:`TcpProxy.replies_lost` counts
  the answers lost, so a test can wait for the request to have been acted on.

:meth:`TcpProxy.heal` lets traffic flow again.
"""

from __future__ import annotations

import contextlib
import select
import socket
import struct
import threading
from typing import Literal

from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.proving_ground.launchers.lifecycle import Launcher

CutMode = Literal["blackhole", "reset", "lose_replies"]
_CUT_MODES = ("blackhole", "reset", "lose_replies")

_CHUNK = 65536
_POLL_S = 0.2


def _reset(sock: socket.socket) -> None:
    """Close ``sock`` with an RST instead of a FIN."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        sock.close()


class _Link:
    """One client connection and its server connection, pumped by two threads."""

    def __init__(self, proxy: TcpProxy, client: socket.socket) -> None:
        self.proxy = proxy
        self.client = client
        self.server: socket.socket | None = None
        self.closed = threading.Event()

    def run(self) -> None:
        # Connecting through a blackholed path waits for the heal, as a SYN would be retried.
        if not self.proxy.wait_flowing(self):
            return
        try:
            self.server = socket.create_connection(self.proxy.target, timeout=10)
        except OSError:
            self.close(reset=True)
            return
        self.server.settimeout(None)
        threading.Thread(target=self._pump, args=(self.server, self.client), daemon=True,
                         name="tcp-proxy-down").start()
        self._pump(self.client, self.server)

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        while not self.closed.is_set():
            try:
                # Nothing is read while cut: the bytes wait in the kernel's buffers.
                if not self.proxy.wait_flowing(self):
                    return
                readable, _, _ = select.select([source], [], [], _POLL_S)
                if not readable:
                    continue
                data = source.recv(_CHUNK)
                if not data:
                    self.close(reset=False)
                    return
                if source is self.server and self.proxy.loses_reply():
                    self.close(reset=True)
                    return
                # A chunk read just before a cut is held until the heal.
                if not self.proxy.wait_flowing(self):
                    return
                sink.sendall(data)
            except (OSError, ValueError):
                self.close(reset=True)
                return

    def close(self, *, reset: bool) -> None:
        if self.closed.is_set():
            return
        self.closed.set()
        for sock in (self.client, self.server):
            if sock is None:
                continue
            if reset:
                _reset(sock)
            else:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
        self.proxy.forget(self)


class TcpProxy(Launcher):
    """Forwards ``127.0.0.1:<port>`` to ``target`` once started, until cut.

    Args:
        target: ``(host, port)`` the connections are forwarded to.
        port: the port to listen on (0: a free one, read it from :attr:`port` once started).
    """

    def __init__(self, target: tuple[str, int], port: int = 0) -> None:
        self.target = target
        self.port = port
        self._listener: socket.socket | None = None
        self._cut: CutMode | None = None
        self._state = threading.Condition()
        self._links: set[_Link] = set()
        self._closed = False
        self._replies_lost = 0

    @property
    def address(self) -> str:
        """``127.0.0.1:<port>``, where clients connect."""
        return f"127.0.0.1:{self.port}"

    @property
    def replies_lost(self) -> int:
        """How many answers of the server a ``"lose_replies"`` cut threw away."""
        with self._state:
            return self._replies_lost

    @property
    def connections(self) -> int:
        """How many client connections are open through the proxy."""
        with self._state:
            return len(self._links)

    def cut(self, mode: CutMode = "blackhole") -> None:
        """Cut the path: ``"blackhole"`` holds every byte, ``"reset"`` closes every connection
        with an RST, ``"lose_replies"`` lets requests through and resets each connection at the
        server's next answer (see the module's description).

        Raises:
            ConfigurationError: ``mode`` is none of these.
        """
        if mode not in _CUT_MODES:
            raise ConfigurationError(
                f"cut mode must be one of {', '.join(map(repr, _CUT_MODES))}, got {mode!r}"
            )
        with self._state:
            self._cut = mode
            links = list(self._links) if mode == "reset" else []
            self._state.notify_all()
        for link in links:
            link.close(reset=True)

    def heal(self) -> None:
        """Let traffic flow again; bytes held by a blackhole go on."""
        with self._state:
            self._cut = None
            self._state.notify_all()

    def _start(self) -> None:
        """Listen on :attr:`port` and forward every connection from now on.

        Raises:
            OSError: the port is taken.
        """
        listener = self._listener = socket.create_server(("127.0.0.1", self.port))
        self.port = listener.getsockname()[1]
        with self._state:
            self._closed = False
        threading.Thread(target=self._accept, args=(listener,), daemon=True,
                         name=f"tcp-proxy-{self.port}").start()

    def _stop(self) -> None:
        """Stop listening and close every connection."""
        with self._state:
            self._closed = True
            links = list(self._links)
            self._state.notify_all()
        listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        for link in links:
            link.close(reset=True)

    # -- used by the links --------------------------------------------------------------------

    def wait_flowing(self, link: _Link) -> bool:
        """Block while blackholed; False when ``link`` must end (reset, closed)."""
        with self._state:
            while self._cut == "blackhole" and not self._closed and not link.closed.is_set():
                self._state.wait(_POLL_S)
            ending = self._closed or self._cut == "reset"
        if ending:
            link.close(reset=True)
        return not link.closed.is_set()

    def loses_reply(self) -> bool:
        """Whether an answer of the server just read is to be thrown away (and counted)."""
        with self._state:
            if self._cut != "lose_replies":
                return False
            self._replies_lost += 1
            return True

    def forget(self, link: _Link) -> None:
        with self._state:
            self._links.discard(link)

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # closed
            link = _Link(self, client)
            with self._state:
                if self._closed or self._cut == "reset":
                    refused = True
                else:
                    refused = False
                    self._links.add(link)
            if refused:
                _reset(client)
                continue
            threading.Thread(target=link.run, daemon=True, name="tcp-proxy-up").start()
