"""``kafka-share-eos twophase recover`` refusing what it cannot use: a missing decision log, a
storage option that is no pair."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(180)]


def test_recover_command_refuses_a_missing_decision_log(tmp_path: Path) -> None:
    command = subprocess.run(
        [sys.executable, "-m", "kafka_share_eos.cli.main", "twophase", "recover",
         "--app-id", "A", "--decision-log", str(tmp_path / "nowhere"),
         "--delta", str(tmp_path / "table")],
        # Wide enough that the usage box never wraps the path in the message.
        capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "COLUMNS": "400"},
    )
    assert command.returncode == 2
    assert "nowhere" in command.stderr and "--decision-log" in command.stderr
    assert not (tmp_path / "nowhere").exists()


def test_recover_command_names_a_storage_option_that_is_no_pair(tmp_path: Path) -> None:
    command = subprocess.run(
        [sys.executable, "-m", "kafka_share_eos.cli.main", "twophase", "recover",
         "--app-id", "A", "--decision-log", str(tmp_path), "--delta", str(tmp_path / "table"),
         "-o", "region"],
        capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "COLUMNS": "400"},
    )
    assert command.returncode == 2
    assert "'region'" in command.stderr and "--storage-option" in command.stderr
