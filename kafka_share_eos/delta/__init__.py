"""Delta plumbing every Delta writer shares (the upsert and append sinks, the identity ledger,
the two-phase participant, the dead-letter table, delta-spark's MERGE): where a table lives,
application transactions that make a commit happen at most once, and the types delta-rs stores.

Importing this package loads no optional library; deltalake loads when a table is first opened
(the ``delta`` extra).
"""
