"""Every module of the toolkit is imported once, on the main thread, before any test runs.

kafka-share-eos registers a pytest plugin, so pytest rewrites the assertions of every module of
the distribution as it is first imported, parsing its source with ``ast``. On Python 3.11 two
threads parsing at once can fail with "SystemError: AST constructor recursion depth mismatch",
and the toolkit imports some modules on first use from threads of its own (the two-phase
coordinator prepares its participants at the same time). Outside pytest no import hook parses
them, so the toolkit itself needs nothing of the kind.
"""

from __future__ import annotations

import importlib
import pkgutil

import kafka_share_eos
import kafka_share_eos.strategies

for _package in (kafka_share_eos, kafka_share_eos.strategies):
    for _module in pkgutil.walk_packages(_package.__path__, f"{_package.__name__}."):
        importlib.import_module(_module.name)
