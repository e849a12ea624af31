"""What the demo and the examples print: a few lines, no logs, and the path of the log file."""

from __future__ import annotations

import re
from pathlib import Path

LINE_BUDGET = 40
LOG_LINE = re.compile(r"Spark's and the JVM's logs: (\S+)")
CRASH_LINE = "simulated crash in batch"


def quiet_run_log(output: str, crashes: int = 0) -> str:
    """Check that a run's terminal output (stdout and stderr) is quiet, and return the log it
    names: fewer than :data:`LINE_BUDGET` lines, no stack trace, no Spark WARN line and no
    librdkafka "Preview" warning, ``crashes`` crash lines; the log holds Spark's own lines."""
    lines = output.splitlines()
    assert len(lines) < LINE_BUDGET, output
    noise = [
        line for line in lines
        if "Traceback" in line or " WARN " in line or "WARNING" in line
        or "preview" in line.lower() or line.startswith("\tat ")
    ]
    assert not noise, output
    assert output.count(CRASH_LINE) == crashes, output
    named = LOG_LINE.findall(output)
    assert len(named) == 1, output
    log = Path(named[0]).read_text()
    assert "log4j2-defaults.properties" in log, log[-3000:]  # Spark's start went there
    return log
