"""Toxiproxy in front of an echo server: it forwards, holds everything while blackholed,
refuses while cut so, loses the server's answers while requests still pass, and takes
Toxiproxy's own toxics; in front of the suite's S3 server, obstore's requests are slowed, then
refused naming the object, and pass again once healed."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import obstore
import pytest
from obstore.store import S3Store

from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.proving_ground.errors import ObjectStoreServerError
from kafka_share_eos.proving_ground.launchers.s3_server import S3Server
from kafka_share_eos.proving_ground.launchers.toxiproxy import Proxy, Toxiproxy, toxiproxy_binary

pytestmark = pytest.mark.timeout(60)


@dataclass
class Echo:
    """An echo server that keeps what reached it."""

    server: socket.socket
    received: list[bytes] = field(default_factory=list)

    @property
    def address(self) -> str:
        host, port = self.server.getsockname()
        return f"{host}:{port}"

    def echo(self, conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):  # closed by the proxy
            while data := conn.recv(4096):
                self.received.append(data)
                conn.sendall(data)

    def serve(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self.echo, args=(conn,), daemon=True).start()


@pytest.fixture
def echo() -> Iterator[Echo]:
    server = Echo(socket.create_server(("127.0.0.1", 0)))
    threading.Thread(target=server.serve, daemon=True).start()
    yield server
    server.server.close()


@pytest.fixture
def proxy(toxiproxy: Toxiproxy, echo: Echo) -> Iterator[Proxy]:
    made = toxiproxy.proxy(echo.address)
    yield made
    made.delete()


def connect(proxy: Proxy) -> socket.socket:
    return socket.create_connection(("127.0.0.1", proxy.port), timeout=30)


def connected(proxy: Proxy) -> socket.socket:
    """A connection through ``proxy`` that a byte went both ways on."""
    client = connect(proxy)
    client.sendall(b"a")
    assert client.recv(1) == b"a"
    return client


def closed(client: socket.socket) -> bool:
    """Whether the proxy closed ``client``'s connection (a FIN or an RST)."""
    try:
        return client.recv(1) == b""
    except ConnectionResetError:
        return True


def test_bytes_pass_both_ways(proxy: Proxy, echo: Echo) -> None:
    with connect(proxy) as client:
        client.sendall(b"ping")
        assert client.recv(4) == b"ping"
    assert echo.received == [b"ping"]


def test_a_blackhole_holds_bytes_until_the_heal(proxy: Proxy, echo: Echo) -> None:
    with connected(proxy) as client:
        proxy.cut("blackhole")
        client.sendall(b"held")
        late = connect(proxy)  # accepted, nothing forwarded
        late.sendall(b"late")
        client.settimeout(0.5)
        late.settimeout(0.5)
        with pytest.raises(TimeoutError):
            client.recv(4)
        with pytest.raises(TimeoutError):
            late.recv(4)
        assert echo.received == [b"a"]
        proxy.heal()
        client.settimeout(30)
        late.settimeout(30)
        assert client.recv(4) == b"held"
        assert late.recv(4) == b"late"
        late.close()
    assert proxy.toxics() == []


def test_refuse_closes_connections_and_refuses_new_ones_until_the_heal(proxy: Proxy) -> None:
    with connected(proxy) as client:
        proxy.cut("refuse")
        assert closed(client)
    assert not proxy.enabled
    with pytest.raises(ConnectionRefusedError):
        connect(proxy)
    proxy.heal()
    with connect(proxy) as client:  # on the same port
        client.sendall(b"back")
        assert client.recv(4) == b"back"


def test_an_unknown_cut_is_refused(proxy: Proxy) -> None:
    with pytest.raises(ConfigurationError, match="blackhole"):
        proxy.cut("drop")  # type: ignore[arg-type]


def test_lose_replies_lets_requests_through_and_closes_at_the_answer(
    proxy: Proxy, echo: Echo
) -> None:
    with connected(proxy) as client:
        proxy.cut("lose_replies")
        client.sendall(b"commit")
        # The echo server answered (the request reached it), the client loses the answer.
        assert closed(client)
    assert echo.received == [b"a", b"commit"]
    proxy.heal()
    with connect(proxy) as client:
        client.sendall(b"back")
        assert client.recv(4) == b"back"


def test_latency_delays_every_answer(proxy: Proxy) -> None:
    proxy.add_toxic("latency", latency=400)
    with connect(proxy) as client:
        started = time.monotonic()
        client.sendall(b"slow")
        assert client.recv(4) == b"slow"
        assert time.monotonic() - started >= 0.4


def test_timeout_drops_the_bytes_and_closes_the_connection(proxy: Proxy, echo: Echo) -> None:
    proxy.add_toxic("timeout", stream="upstream", timeout=300)
    with connect(proxy) as client:
        client.sendall(b"lost")
        assert closed(client)
    assert echo.received == []


def test_limit_data_closes_the_connection_past_its_bytes(proxy: Proxy) -> None:
    proxy.add_toxic("limit_data", bytes=4)
    with connect(proxy) as client:
        client.sendall(b"four")
        assert client.recv(4) == b"four"
        client.sendall(b"more")
        assert closed(client)


def test_toxiproxy_refuses_an_unknown_toxic_with_its_reason(proxy: Proxy) -> None:
    with pytest.raises(ObjectStoreServerError, match="invalid toxic type"):
        proxy.add_toxic("flood")


def test_a_build_without_go_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ObjectStoreServerError, match="no 'go' is on PATH: install it"):
        toxiproxy_binary()


def test_the_object_store_through_a_proxy_slowed_refused_and_healed(
    toxiproxy: Toxiproxy, s3_server: S3Server
) -> None:
    proxy = toxiproxy.proxy(s3_server.endpoint.removeprefix("http://"))
    key = f"toxiproxy/{uuid.uuid4().hex[:8]}"
    store = S3Store(**{**s3_server.obstore_kwargs(), "endpoint": f"http://{proxy.address}"},
                    retry_config={"max_retries": 1, "retry_timeout": timedelta(seconds=5),
                                  "backoff": {"init_backoff": timedelta(milliseconds=20),
                                              "max_backoff": timedelta(milliseconds=50),
                                              "base": 2}})
    try:
        proxy.add_toxic("latency", latency=500)
        started = time.monotonic()
        obstore.put(store, key, b"slow")
        assert time.monotonic() - started >= 0.5
        proxy.remove_toxic("latency_downstream")
        proxy.cut("refuse")
        with pytest.raises(Exception, match="error sending request") as error:
            obstore.get(store, key)
        assert f"/{s3_server.bucket}/{key}" in str(error.value)
        proxy.heal()
        assert bytes(obstore.get(store, key).bytes()) == b"slow"
    finally:
        proxy.delete()
