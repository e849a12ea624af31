"""Maintenance on a pipeline's Delta table while it writes: the proving ground's loops of
OPTIMIZE, VACUUM and another team's appends, a compaction job as a process of its own, and how
much of the maintenance landed between the pipeline's commits."""

from __future__ import annotations

from deltalake import DeltaTable

from kafka_share_eos.proving_ground.verify.outages.delta_upkeep import Maintenance

# A compaction job as a separate process, for tables on an object store: table URI and rounds
# as arguments (storage settings from the environment), one line printed per compaction.
COMPACTION = """
import sys, time
from deltalake import DeltaTable
table, rounds = sys.argv[1], int(sys.argv[2])
while not DeltaTable.is_deltatable(table):
    time.sleep(0.05)
for _ in range(rounds):
    DeltaTable(table).optimize.compact()
    print("[]", flush=True)
"""


def interleaved(uri: str) -> int:
    """How many OPTIMIZE and VACUUM commits landed between the table's first and last data
    commit (WRITE or MERGE): maintenance that ran while the table was being written."""
    history = sorted((int(h["version"]), str(h["operation"])) for h in DeltaTable(uri).history())
    data = [version for version, operation in history if operation in {"WRITE", "MERGE"}]
    return sum(1 for version, operation in history
               if operation in {"OPTIMIZE", "VACUUM START"} and data[0] < version < data[-1])


__all__ = ["COMPACTION", "Maintenance", "interleaved"]
