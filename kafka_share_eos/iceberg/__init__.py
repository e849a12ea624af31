"""Iceberg plumbing through pyiceberg: the catalog a strategy's copies build in their own
process (:mod:`.catalogs`), the tables it writes and what it refuses (:mod:`.tables`), and the
snapshot properties that record which batches were committed (:mod:`.snapshots`).

Importing this package loads no pyiceberg; each use checks the ``iceberg`` extra first.
"""
