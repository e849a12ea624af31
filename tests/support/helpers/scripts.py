"""Running the project's commands and examples as real processes in tests."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

CLI = str(Path(sys.executable).parent / "kafka-share-eos")
"""The ``kafka-share-eos`` command of this environment."""
# Wide, plain error output, so messages are not wrapped or coloured.
CLI_ENV = {**os.environ, "COLUMNS": "300", "NO_COLOR": "1", "TERM": "dumb"}


def run_python(
    *args: str, timeout: float = 280, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``python ARGS`` with this interpreter (in ``env``, else this process's environment);
    fail with the output's tail unless it exits 0."""
    result = subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=timeout, check=False,
        env=env,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result
