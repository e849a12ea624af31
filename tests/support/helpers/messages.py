"""Stand-ins for the ``confluent_kafka.Message`` objects the source converts to Arrow rows."""

from __future__ import annotations

from typing import Any


class FakeMessage:
    """The accessors of ``confluent_kafka.Message`` that the conversion reads."""

    def __init__(self, offset: int, **fields: Any) -> None:
        self._offset = offset
        self._fields = fields

    def key(self) -> Any:
        return self._fields.get("key")

    def value(self) -> Any:
        return self._fields.get("value")

    def topic(self) -> str:
        return "orders"

    def partition(self) -> int:
        return 3

    def offset(self) -> int:
        return self._offset

    def timestamp(self) -> tuple[int, int]:
        return self._fields.get("timestamp", (1, 1_700_000_000_123))

    def headers(self) -> Any:
        return self._fields.get("headers")

    def delivery_count(self) -> int:
        return self._fields.get("delivery_count", 1)


def messages() -> list[FakeMessage]:
    return [
        FakeMessage(0, key=b"k", value=b"v", headers=[("h", b"1"), ("h", None)]),
        FakeMessage(1, key=None, value=b"", timestamp=(0, -1), delivery_count=3),
        FakeMessage(2, key=b"", value=None, timestamp=(2, 5)),
        FakeMessage(3, key=b"big", value=b"x" * 1_000_000),
    ]
