"""A two-phase-commit participant kept in memory, for the coordinator and recovery tests."""

from __future__ import annotations

import pyarrow as pa

from kafka_share_eos.twophase import Token, Transaction


class MemoryParticipant:
    """Keeps prepared tokens in a dict; enough to observe what recovery decides."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.prepared: dict[str, Token] = {}
        self.committed: list[str] = []
        self.aborted: list[str] = []

    def prepare(self, rows: pa.Table, txn: Transaction) -> Token:
        token = Token(self.name, txn.txid, rows.num_rows, {"rows": rows.num_rows})
        self.prepared[txn.txid] = token
        return token

    def commit(self, token: Token) -> None:
        self.prepared.pop(token.txid, None)
        self.committed.append(token.txid)

    def abort(self, token: Token) -> None:
        self.prepared.pop(token.txid, None)
        self.aborted.append(token.txid)

    def recover(self, prefix: str) -> list[Token]:
        return [t for txid, t in self.prepared.items() if txid.startswith(prefix)]
