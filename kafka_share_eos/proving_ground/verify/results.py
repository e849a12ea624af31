"""The results file of a matrix: one JSON line per finished run, so a long matrix can resume.

A run is identified by everything that shapes it (strategy, crash point, index, seed, sizes and
mix): a matrix started again with the same file and options skips the runs already recorded and
reports them with the new ones. Failed runs stay recorded as they were; resuming never re-runs
a run to replace its result.
"""

from __future__ import annotations

import json
import threading
from dataclasses import asdict
from pathlib import Path
from typing import Any

from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.proving_ground.verify.score import Score
from kafka_share_eos.proving_ground.verify.spec import Mix, RunResult, RunSpec


def spec_key(spec: RunSpec) -> str:
    """The identity of a run in a results file."""
    return json.dumps(asdict(spec), sort_keys=True)


def result_to_json(result: RunResult) -> dict[str, Any]:
    """Every field of a run's result, as written to the results file."""
    return asdict(result)


def result_from_json(data: dict[str, Any]) -> RunResult:
    """The inverse of :func:`result_to_json`."""
    spec = dict(data["spec"])
    mix = dict(spec["mix"])
    # Files written before a run could have more than two pipelines.
    if "second_consumer" in mix:
        mix["pipelines"] = 2 if mix.pop("second_consumer") else 1
    spec["mix"] = Mix(**mix)
    score = dict(data["score"])
    score["per_sink"] = {sink: tuple(counts) for sink, counts in score["per_sink"].items()}
    return RunResult(**{**data, "spec": RunSpec(**spec), "score": Score(**score)})


class ResultsFile:
    """Appends finished runs to ``path`` and reads back those a previous matrix recorded."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def recorded(self) -> dict[str, RunResult]:
        """Runs already in the file, by :func:`spec_key`; a line cut short by a crash of the
        verifier itself is ignored (that run simply runs again)."""
        if not self.path.exists():
            return {}
        runs = {}
        lines = self.path.read_text().splitlines()
        for number, line in enumerate(lines, 1):
            try:
                result = result_from_json(json.loads(line))
            except (ValueError, KeyError, TypeError) as error:
                if number == len(lines):
                    continue
                raise ConfigurationError(
                    f"{self.path}:{number}: not a verify result: {error}"
                ) from error
            runs[spec_key(result.spec)] = result
        return runs

    def append(self, result: RunResult) -> None:
        """Record a finished run (one line, flushed before returning)."""
        line = json.dumps(result_to_json(result)) + "\n"
        with self._lock, self.path.open("a") as out:
            out.write(line)
