"""Kept Delta table handles, on real Delta tables: reopened after a run of commits."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.ledgers import delta_rows, records

from kafka_share_eos.delta import handles
from kafka_share_eos.sinks.delta_append import DeltaAppendSink

pytestmark = pytest.mark.timeout(120)


def test_a_kept_handle_is_reopened_after_a_run_of_commits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A handle that has seen many versions is replaced by one opened anew (delta-rs' commits
    through an old handle slow down), and what this process knows of its commits stays true."""
    monkeypatch.setattr(handles, "REOPEN_AFTER_VERSIONS", 3)
    uri = str(tmp_path / "sink")
    sink = DeltaAppendSink(uri, app_id="app")
    assert sink(records(("t", 0, 0)), 0)
    first = sink.location.snapshot()
    for batch in range(1, 4):
        assert sink(records(("t", 0, batch)), batch)
    reopened = sink.location.snapshot()
    assert reopened is not first and reopened is not None and reopened.version() == 3
    assert not sink(records(("t", 0, 3)), 3)
    assert sink(records(("t", 0, 4)), 4)
    assert delta_rows(uri) == [("t", 0, o) for o in range(5)]
