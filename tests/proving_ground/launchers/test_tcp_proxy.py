"""The tests' TCP proxy: forwards, holds everything while blackholed, resets when cut so, and
loses the server's answers while requests still pass."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator

import pytest

from kafka_share_eos.proving_ground.launchers.tcp_proxy import TcpProxy

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def proxy() -> Iterator[TcpProxy]:
    """A proxy in front of an echo server."""
    server = socket.create_server(("127.0.0.1", 0))

    def echo(conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):  # reset by the proxy
            while data := conn.recv(4096):
                conn.sendall(data)

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=echo, args=(conn,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    with TcpProxy(server.getsockname()) as forwarder:
        yield forwarder
    server.close()


def connect(proxy: TcpProxy) -> socket.socket:
    return socket.create_connection(("127.0.0.1", proxy.port), timeout=30)


def connected(proxy: TcpProxy) -> socket.socket:
    """A connection through ``proxy`` that a byte went both ways on."""
    client = connect(proxy)
    client.sendall(b"a")
    assert client.recv(1) == b"a"
    return client


def test_bytes_pass_both_ways(proxy: TcpProxy) -> None:
    with connect(proxy) as client:
        client.sendall(b"ping")
        assert client.recv(4) == b"ping"


def test_a_blackhole_holds_bytes_until_the_heal(proxy: TcpProxy) -> None:
    with connected(proxy) as client:
        proxy.cut("blackhole")
        client.sendall(b"held")
        late = connect(proxy)  # accepted, not forwarded
        late.sendall(b"late")
        client.settimeout(0.5)
        late.settimeout(0.5)
        with pytest.raises(TimeoutError):
            client.recv(4)
        with pytest.raises(TimeoutError):
            late.recv(4)
        assert proxy.connections == 2  # nothing was closed
        proxy.heal()
        client.settimeout(30)
        late.settimeout(30)
        assert client.recv(4) == b"held"
        assert late.recv(4) == b"late"
        late.close()


def test_a_reset_closes_connections_and_refuses_new_ones_until_the_heal(
    proxy: TcpProxy,
) -> None:
    with connected(proxy) as client:
        proxy.cut("reset")
        with pytest.raises(ConnectionResetError):
            client.recv(1)
    # The RST comes at the connect or at the first read.
    with pytest.raises(ConnectionResetError), connect(proxy) as refused:
        refused.recv(1)
    proxy.heal()
    with connect(proxy) as client:
        client.sendall(b"back")
        assert client.recv(4) == b"back"


def test_an_unknown_cut_is_refused(proxy: TcpProxy) -> None:
    with pytest.raises(ValueError, match="blackhole"):
        proxy.cut("drop")  # type: ignore[arg-type]


def test_lose_replies_lets_requests_through_and_resets_at_the_answer(proxy: TcpProxy) -> None:
    with connected(proxy) as client:
        proxy.cut("lose_replies")
        client.sendall(b"commit")
        # The echo server answered (the request reached it), the client gets the RST instead.
        with pytest.raises(ConnectionResetError):
            client.recv(6)
    assert proxy.replies_lost == 1
    proxy.heal()
    with connect(proxy) as client:
        client.sendall(b"back")
        assert client.recv(4) == b"back"
    assert proxy.replies_lost == 1
