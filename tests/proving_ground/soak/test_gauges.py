"""What the soak measures: progress lines read as they are appended, resident memory, objects
under a prefix, rows of a Delta table."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
from deltalake import write_deltalake
from obstore.store import LocalStore

from kafka_share_eos.proving_ground.soak.gauges import (
    Life,
    Memory,
    ProgressTail,
    delta_rows,
    journal_files,
    memory,
)


def test_progress_is_read_line_by_line_as_it_grows(tmp_path: Path) -> None:
    path = tmp_path / "progress.jsonl"
    tail = ProgressTail(path)
    tail.read()
    assert (tail.batches, tail.applied) == (0, 0)

    with path.open("w") as out:
        out.write(json.dumps({"batch": 0, "started": True, "records": [[0, 1]]}) + "\n")
        out.write(json.dumps({"batch": 0, "written": 3}) + "\n")
        # A line a SIGKILL cut short, then a restart's lines after it.
        out.write('{"batch": 1, "writ\n')
        out.write(json.dumps({"batch": 1, "written": 4}) + "\n")
        out.write('{"batch": 2, "written"')
    tail.read()
    assert (tail.batches, tail.applied) == (2, 7)

    with path.open("a") as out:
        out.write(": 5}\n")
    tail.read()
    assert (tail.batches, tail.applied) == (3, 12)


def test_memory_of_a_process_without_a_jvm_is_its_own() -> None:
    used = memory(os.getpid())

    assert used.driver > 1
    assert used.runners == 0
    assert memory(2**22 + 1) == Memory(0.0, 0.0)


def test_journal_files_are_counted_apart_from_its_batch_metrics(tmp_path: Path) -> None:
    for name in ("run/pipeline-a/journal/00000000000000000001-0000.arrow",
                 "run/pipeline-a/journal/_leases/0", "run/pipeline-a/journal/_rejections/3",
                 "run/pipeline-a/journal/_metrics/slots/00000000000000000002-0001.json",
                 "run/pipeline-a/journal/_metrics/00000000000000000001.json",
                 "run/pipeline-a/journal/_metrics/00000000000000000002.json",
                 "run/pipeline-a/checkpoint/offsets/0", "run/pipeline-a/journal-old/1.arrow"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    store = LocalStore(tmp_path)

    assert journal_files(store, "run/pipeline-a/journal") == (4, 2)
    assert journal_files(store, "run/pipeline-b/journal") == (0, 0)


def test_rows_of_a_delta_table_and_of_none(tmp_path: Path) -> None:
    uri = str(tmp_path / "ledger")
    assert delta_rows(uri, {}) == 0

    write_deltalake(uri, pa.table({"offset": list(range(7))}))
    write_deltalake(uri, pa.table({"offset": list(range(5))}), mode="append")

    assert delta_rows(uri, {}) == 12


def test_a_life_reports_what_it_measured() -> None:
    life = Life(12.34, 20, warm_up=Memory(800.04, 120.0), heap_live=[210.04, 212.96])

    assert life.as_dict() == {"started_s": 12.3,
                              "rss_warm_up_mib": {"driver": 800.0, "runners": 120.0},
                              "rss_last_mib": None, "heap_live_mib": [210.0, 213.0]}
