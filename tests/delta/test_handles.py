"""Kept Delta table handles, on real Delta tables: reopened after a run of commits, and left
behind by a pickled copy."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.ledgers import delta_rows, records
from helpers.pickled import copied

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


def test_a_copy_opens_its_own_handle_and_takes_nothing_of_what_the_original_knew(
    tmp_path: Path,
) -> None:
    """A pickled copy (a Spark Connect server's, say) reads the table itself: it finds the
    batches the original appended, and a copy made again later finds the first copy's."""
    uri = str(tmp_path / "sink")
    sink = DeltaAppendSink(uri, app_id="app")
    assert sink(records(("t", 0, 0)), 0)

    copy = copied(sink)
    assert copy.location.seen_version() is None and copy.location._own_commits == {}
    assert not copy(records(("t", 0, 0)), 0)
    assert copy(records(("t", 0, 1)), 1)
    again = copied(sink)
    assert not again(records(("t", 0, 1)), 1)
    assert again(records(("t", 0, 2)), 2)
    assert delta_rows(uri) == [("t", 0, o) for o in range(3)]
