"""A cluster's feature levels (``share.version``, ``metadata.version``, ...), asked of a broker.

Kafka turns a behaviour on cluster-wide by *finalising* a feature level (``kafka-features.sh
upgrade``); a broker announces the levels, and the highest it supports, in its ApiVersions
answer (version 3 on, KIP-584). librdkafka reads that answer but does not expose it, so this
module sends the one request itself. Brokers answer ApiVersions before any SASL exchange (a
client needs it to pick its SASL versions), so only TLS is set up for a secured listener.
"""

from __future__ import annotations

import socket
import ssl
import struct
from collections.abc import Mapping
from typing import Any

from kafka_share_eos.errors import GroupConfigError

_API_VERSIONS, _VERSION = 18, 3
_FINALIZED_TAG = 2


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def take(self, size: int) -> bytes:
        chunk = self.data[self.at:self.at + size]
        self.at += size
        return chunk

    def int16(self) -> int:
        return int(struct.unpack(">h", self.take(2))[0])

    def uvarint(self) -> int:
        value, shift = 0, 0
        while True:
            byte = self.take(1)[0]
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
            shift += 7

    def string(self) -> str:
        return self.take(self.uvarint() - 1).decode()

    def skip_tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())

    def features(self) -> dict[str, int]:
        """A compact array of (name, max level, min level, tags): the max level of each."""
        found = {}
        for _ in range(self.uvarint() - 1):
            name, level = self.string(), self.int16()
            self.int16()
            found[name] = level
            self.skip_tags()
        return found


def _request(client_id: str) -> bytes:
    name = b"kafka-share-eos"

    def compact(raw: bytes) -> bytes:
        return bytes([len(raw) + 1]) + raw

    header = struct.pack(">hhih", _API_VERSIONS, _VERSION, 1, len(client_id)) + (
        client_id.encode() + b"\0"
    )
    body = compact(name) + compact(b"1") + b"\0"
    return struct.pack(">i", len(header) + len(body)) + header + body


def _parse(answer: bytes) -> dict[str, int]:
    reader = _Reader(answer)
    reader.take(4)  # correlation id: one request per connection
    if reader.int16() != 0:
        # UNSUPPORTED_VERSION: a broker without ApiVersions 3 predates feature levels.
        return {}
    for _ in range(reader.uvarint() - 1):
        reader.take(6)
        reader.skip_tags()
    reader.take(4)  # throttle time
    for _ in range(reader.uvarint()):
        tag, size = reader.uvarint(), reader.uvarint()
        field = reader.take(size)
        if tag == _FINALIZED_TAG:
            return _Reader(field).features()
    return {}


def _connect(host: str, port: int, config: Mapping[str, Any], timeout_s: float) -> socket.socket:
    sock = socket.create_connection((host, port), timeout=timeout_s)
    if not str(config.get("security.protocol", "plaintext")).lower().endswith("ssl"):
        return sock
    context = ssl.create_default_context(cafile=config.get("ssl.ca.location"))
    if config.get("ssl.certificate.location"):
        context.load_cert_chain(config["ssl.certificate.location"],
                                config.get("ssl.key.location"), config.get("ssl.key.password"))
    if str(config.get("ssl.endpoint.identification.algorithm", "https")).lower() == "none":
        context.check_hostname = False
    return context.wrap_socket(sock, server_hostname=host)


def _receive(sock: socket.socket, size: int) -> bytes:
    chunks = b""
    while len(chunks) < size:
        chunk = sock.recv(size - len(chunks))
        if not chunk:
            raise GroupConfigError("the broker closed the connection")
        chunks += chunk
    return chunks


def finalized_features(client_config: Mapping[str, Any], timeout_s: float = 10.0) -> dict[str, int]:
    """The feature levels in force, as the first reachable bootstrap broker of
    ``client_config`` reports them (none for a broker older than feature levels).

    Raises:
        GroupConfigError: no bootstrap broker answered (the reasons of each are named).
    """
    failures = []
    for address in str(client_config["bootstrap.servers"]).split(","):
        host, _, port = address.strip().rpartition(":")
        try:
            with _connect(host.strip("[]"), int(port), client_config, timeout_s) as sock:
                sock.sendall(_request(str(client_config.get("client.id", "kafka-share-eos"))))
                size = struct.unpack(">i", _receive(sock, 4))[0]
                return _parse(_receive(sock, size))
        except (OSError, ValueError, IndexError, struct.error, GroupConfigError) as error:
            failures.append(f"{address.strip()}: {error}")
    raise GroupConfigError(f"no broker told its feature levels: {'; '.join(failures)}")
