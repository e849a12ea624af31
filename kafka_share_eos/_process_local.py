"""What a pickled copy leaves behind: the resources and the knowledge of the process it was made in.

Spark pickles strategies, and what they hold, into other processes: a Spark Connect client
sends the ``foreachBatch`` strategy to a Python worker of the server, which runs every batch
with it, and the executors' write paths send writers and participants to Spark tasks. A
connection, a Kafka client, a Delta table handle, a lock or a thread cannot travel, and what
one process learnt about its own commits (a cached snapshot, the last batch it wrote) is not
true of the copy: another process may have written since, or may still write beside it. So a
copy keeps the configuration and starts with these the way a process started anew starts:
created again on first use, learnt again from the durable state.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, ClassVar


class ProcessLocal:
    """An object some of whose attributes belong to the process that set them.

    A class names them in ``_PROCESS_LOCAL`` (made by :meth:`attributes`), each with the
    function making the value a copy starts with (what ``__init__`` sets: None for a client
    made on first use, an empty dict for a cache). They are left out of the pickled state, and
    the copy (pickled, or made by ``copy.copy``) gets new values, made in its own process;
    every other attribute travels as it is. The names of the whole class hierarchy count, so a
    subclass names only its own.
    """

    _PROCESS_LOCAL: ClassVar[Mapping[str, Callable[[], object]]] = MappingProxyType({})

    @staticmethod
    def attributes(**fresh: Callable[[], object]) -> Mapping[str, Callable[[], object]]:
        """A class's ``_PROCESS_LOCAL``: each attribute with the function making its value in
        a copy (``nothing``, ``dict``, ``int``, ...)."""
        return MappingProxyType(fresh)

    @classmethod
    def _process_local(cls) -> dict[str, Callable[[], object]]:
        """The attributes this class and its bases name, with their functions."""
        named: dict[str, Callable[[], object]] = {}
        for klass in reversed(cls.__mro__):
            named.update(vars(klass).get("_PROCESS_LOCAL", {}))
        return named

    def __getstate__(self) -> dict[str, Any]:
        local = self._process_local()
        return {name: value for name, value in self.__dict__.items() if name not in local}

    def __setstate__(self, state: Mapping[str, Any]) -> None:
        self.__dict__.update(state)
        for name, fresh in self._process_local().items():
            self.__dict__[name] = fresh()


def nothing() -> None:
    """The value of an attribute a copy creates on first use."""
    return None
