"""Benchmarks that need the delta-spark environment's pyspark 4.2 (``.venv-delta-spark``, made by
``./dev``) run a module of their own there as a child process, which prints its result as the
last line of its output, in JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

TIER_PYTHON = Path(__file__).resolve().parents[3] / ".venv-delta-spark" / "bin" / "python"
STOP_TIMEOUT_S = 20.0
"""How long a stopped child may take to stop its Spark session before it is killed."""


def run_module(python: Path, module: str, arguments: list[str], timeout_s: float,
               what: str) -> dict[str, Any]:
    """``python -m module arguments...`` with Spark's workers on the same ``python``; its last
    line of output, parsed.

    Raises:
        RuntimeError: the child failed or printed nothing; the message names ``what`` and ends
            with its output.
    """
    env = {**os.environ, "PYSPARK_PYTHON": str(python), "PYSPARK_DRIVER_PYTHON": str(python)}
    child = subprocess.Popen(
        [str(python), "-m", module, *arguments],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        env=env,
    )
    try:
        stdout, stderr = child.communicate(timeout=timeout_s)
    except BaseException:
        # Stopped or timed out: SIGTERM lets the child stop its Spark session (and JVM) first.
        child.terminate()
        try:
            child.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        raise
    lines = stdout.strip().splitlines()
    if child.returncode or not lines:
        raise RuntimeError(f"{what} failed ({child.returncode}): {(stderr or stdout)[-3000:]}")
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def child_main(measure: Callable[..., dict[str, Any]], arguments: str) -> None:
    """The child's side of :func:`run_module`: ``measure`` called with the JSON object
    ``arguments``, its result printed as JSON on the last line; SIGTERM stops its Spark session
    on the way out."""
    from kafka_share_eos.proving_ground.signals import Terminated, sigterm_unwinds

    try:
        with sigterm_unwinds():
            print(json.dumps(measure(**json.loads(arguments))))
    except Terminated:
        sys.exit(143)
