"""Where per-batch metrics are kept, beside the journal (no broker, no Spark)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers.metrics import batch_metrics

from kafka_share_eos.journal import Journal
from kafka_share_eos.journal.metrics_store import METRICS_DIR, MetricsStore, entry_name


@pytest.mark.parametrize("uri", [False, True], ids=["path", "file-uri"])
def test_metrics_store_keeps_only_the_newest_entries(tmp_path: Path, uri: bool) -> None:
    location = f"file://{tmp_path}/j" if uri else str(tmp_path / "j")
    store = MetricsStore(location, keep=3)
    for seq in range(1, 6):
        store.write(batch_metrics(seq))
    assert store.prune() == [1, 2]
    assert sorted(os.listdir(tmp_path / "j" / METRICS_DIR)) == [entry_name(s) for s in (3, 4, 5)]
    assert [m.seq for m in store.read_all()] == [3, 4, 5]
    # A new run lists what an earlier run left before pruning.
    for seq in (6, 7):
        store.write(batch_metrics(seq))
    assert MetricsStore(location, keep=2).prune() == [3, 4, 5]


def test_inspecting_metrics_never_creates_a_journal(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        MetricsStore(str(tmp_path / "absent"), create=False).read_all()
    assert not (tmp_path / "absent").exists()
    Journal(str(tmp_path / "empty")).sequences()
    assert MetricsStore(str(tmp_path / "empty"), create=False).read_all() == []
    assert not (tmp_path / "empty" / METRICS_DIR).exists()
