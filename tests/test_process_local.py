"""What a pickled copy leaves behind: the attributes a class and its bases name start anew in
the copy, with the values their functions make; the rest travels, and the original keeps all."""

from __future__ import annotations

import copy
import pickle
import threading

from kafka_share_eos._process_local import ProcessLocal, nothing


class Client(ProcessLocal):
    _PROCESS_LOCAL = ProcessLocal.attributes(_connection=nothing, _seen=dict)

    def __init__(self, address: str) -> None:
        self.address = address
        self._connection: threading.Lock | None = threading.Lock()  # cannot be pickled
        self._seen = {"offset": 7}


class CountingClient(Client):
    _PROCESS_LOCAL = ProcessLocal.attributes(_lock=threading.Lock, _batches=int)

    def __init__(self, address: str) -> None:
        super().__init__(address)
        self._lock = threading.Lock()
        self._batches = 3


def test_a_copy_keeps_the_configuration_and_starts_the_rest_anew() -> None:
    client = CountingClient("db:5432")

    twin = pickle.loads(pickle.dumps(client))

    assert twin.address == "db:5432"
    # A base's names and the subclass's, each with a value of its own in the copy.
    assert (twin._connection, twin._seen, twin._batches) == (None, {}, 0)
    assert twin._lock is not client._lock and not twin._lock.locked()
    assert copy.copy(client)._seen == {}
    assert client._connection is not None and client._seen == {"offset": 7}
    assert client._batches == 3


def test_every_copy_gets_containers_of_its_own() -> None:
    first, second = (pickle.loads(pickle.dumps(Client("db"))) for _ in range(2))
    first._seen["offset"] = 9
    assert second._seen == {}
