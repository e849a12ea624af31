"""Delta plumbing every Delta writer shares (the upsert and append sinks, the identity ledger,
the two-phase participant, the dead-letter table, delta-spark's MERGE):

- :mod:`.location`: where a table lives (URI and storage options), opening and creating it;
- :mod:`.handles`: the handle on a table a process keeps between batches, caught up
  incrementally and reopened every :data:`~.handles.REOPEN_AFTER_VERSIONS` versions;
- :mod:`.transactions`: application transactions, which make a commit happen at most once per
  (application id, batch);
- :mod:`.types`: what delta-rs accepts (table URIs it has a store for, Arrow batches cast to the
  types Delta stores);
- :mod:`.predicates`: SQL text for the predicates delta-rs evaluates.

Importing this package loads no optional library; deltalake loads when a table is first opened
(the ``delta`` extra).
"""
