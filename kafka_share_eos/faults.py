"""Named crash points for fault injection.

Production code calls :func:`maybe_crash` at the moments where a crash is most dangerous (after a
prepare, after a decision is logged, ...). Nothing happens unless the environment variable
``KSE_CRASH_AT`` names that point; then the process is killed with SIGKILL, so no ``finally``
block, ``atexit`` hook or buffered write gets to run: the state left behind is exactly what a
power cut or an OOM kill would leave.

``KSE_CRASH_AT`` is a comma-separated list of ``point`` (crash on its first hit) or ``point@n``
(crash on the n-th hit of that point in this process). Two more variables serve a supervisor
that runs a whole pipeline (Spark driver, JVM, source runner, workers) as one process group:

- ``KSE_CRASH_PGID``: SIGKILL that process group rather than only this process, so the pipeline
  dies as a whole wherever the point is hit (planning runs in another process than
  ``foreachBatch``);
- ``KSE_CRASH_RECORD``: a file to which the point and hit number are appended just before the
  kill, telling the supervisor that this crash point, and not something else, killed the run.

A *hold* pauses a process at a point instead of killing it there, to force the slow cases: a
batch that keeps records past their lock so that another application gets them while it still
runs. ``KSE_HOLD_AT`` lists ``point``, ``point@n`` or ``point@n=seconds`` entries; the process
pauses there for ``seconds`` (default: until released). With ``KSE_HOLD_GATE`` naming a
directory, the paused process creates ``<gate>/<point>.held`` and resumes as soon as
``<gate>/<point>.release`` exists, so a test can act while the hold lasts and end it without
guessing a duration.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections import Counter
from pathlib import Path

from kafka_share_eos.errors import ConfigurationError

CRASH_AT_ENV = "KSE_CRASH_AT"

# Every crash point's name, for the code that hits it and for the verifier that arms it.
AFTER_POLL = "source.after_poll"
AFTER_JOURNAL = "source.after_journal"
BEFORE_ACK = "source.before_ack"
DURING_ACK = "source.during_ack"
SLOT_AFTER_POLL = "slot.after_poll"
SLOT_AFTER_SEGMENT = "slot.after_segment"
SLOT_DURING_ACK = "slot.during_ack"
SLOT_READING_OTHER = "slot.reading_other"
SINK_MID_WRITE = "sink.mid_write"
STRATEGY_AFTER_WRITE = "strategy.after_write"
TWO_PHASE_POSTGRES_BEFORE_PREPARE = "2pc.postgres.before_prepare"
TWO_PHASE_BETWEEN_PREPARES = "2pc.between_prepares"
TWO_PHASE_DELTA_AFTER_STAGE = "2pc.delta.after_stage"
TWO_PHASE_AFTER_PREPARE = "2pc.after_prepare"
TWO_PHASE_AFTER_DECISION = "2pc.after_decision"
TWO_PHASE_BETWEEN_COMMITS = "2pc.between_commits"
TWO_PHASE_AFTER_COMMIT = "2pc.after_commit"
DEDUP_BEFORE_CLAIM = "dedup.before_claim"
"""The ledger was read, the claim not committed: a hold here lets another application claim
the same records first."""
DEDUP_BEFORE_SINK = "dedup.before_sink"
DEDUP_AFTER_SINK = "dedup.after_sink"
CRASH_PGID_ENV = "KSE_CRASH_PGID"
CRASH_RECORD_ENV = "KSE_CRASH_RECORD"
HOLD_AT_ENV = "KSE_HOLD_AT"
HOLD_GATE_ENV = "KSE_HOLD_GATE"

_hits: Counter[str] = Counter()
_hold_hits: Counter[str] = Counter()
# A hold without a duration still ends: a gate nobody opens must not hang a pipeline forever.
_LONGEST_HOLD_SECONDS = 600.0


def parse_crash_at(spec: str) -> dict[str, int]:
    """``{point: hit}`` from a ``KSE_CRASH_AT`` value; a point without ``@n`` crashes on hit 1.

    Raises:
        ValueError: naming an entry whose hit number is not a positive integer.
    """
    enabled: dict[str, int] = {}
    for entry in (e.strip() for e in spec.split(",")):
        if not entry:
            continue
        point, sep, hit = entry.partition("@")
        if not sep:
            enabled[point] = 1
            continue
        if not hit.isdigit() or int(hit) < 1:
            raise ConfigurationError(
                f"{CRASH_AT_ENV} entry {entry!r}: the hit after '@' must be a positive integer"
            )
        enabled[point.strip()] = int(hit)
    return enabled


def crash_points() -> frozenset[str]:
    """The crash points enabled through ``KSE_CRASH_AT``."""
    return frozenset(parse_crash_at(os.environ.get(CRASH_AT_ENV, "")))


def crash_spec(point: str, hit: int = 1) -> str:
    """The ``KSE_CRASH_AT`` entry crashing on the ``hit``-th hit of ``point``."""
    return point if hit == 1 else f"{point}@{hit}"


def armed(point: str) -> bool:
    """Whether ``KSE_CRASH_AT`` names ``point``: lets a caller set up a state worth crashing in
    (half of a batch acknowledged, say) only when a crash there is wanted."""
    spec = os.environ.get(CRASH_AT_ENV, "")
    return bool(spec) and point in parse_crash_at(spec)


def maybe_crash(point: str) -> None:
    """Count a hit of ``point``; SIGKILL if ``KSE_CRASH_AT`` enables this hit of it, pause if
    ``KSE_HOLD_AT`` does."""
    maybe_hold(point)
    spec = os.environ.get(CRASH_AT_ENV)
    crash_on = parse_crash_at(spec).get(point) if spec else None
    if _is_armed_hit(point, crash_on, _hits):
        assert crash_on is not None
        _crash(point, crash_on)


def parse_hold_at(spec: str) -> dict[str, tuple[int, float]]:
    """``{point: (hit, seconds)}`` from a ``KSE_HOLD_AT`` value (``point[@n][=seconds]``).

    Raises:
        ConfigurationError: naming an entry whose duration is not a non-negative number.
    """
    holds: dict[str, tuple[int, float]] = {}
    for entry in (e.strip() for e in spec.split(",")):
        if not entry:
            continue
        where, sep, duration = entry.partition("=")
        try:
            seconds = float(duration) if sep else _LONGEST_HOLD_SECONDS
        except ValueError:
            seconds = -1.0
        if seconds < 0:
            raise ConfigurationError(
                f"{HOLD_AT_ENV} entry {entry!r}: the duration after '=' must be seconds >= 0"
            )
        for point, hit in parse_crash_at(where).items():
            holds[point] = (hit, seconds)
    return holds


def gate_files(gate: str | Path, point: str) -> tuple[Path, Path]:
    """The two files of a hold at ``point`` in the ``gate`` directory: the one the held process
    creates once it waits, and the one whose creation lets it go on."""
    return Path(gate, f"{point}.held"), Path(gate, f"{point}.release")


def maybe_hold(point: str) -> None:
    """Count a hit of ``point``; pause there if ``KSE_HOLD_AT`` enables this hit of it."""
    spec = os.environ.get(HOLD_AT_ENV)
    hit, seconds = parse_hold_at(spec).get(point, (None, 0.0)) if spec else (None, 0.0)
    if not _is_armed_hit(point, hit, _hold_hits):
        return
    gate = os.environ.get(HOLD_GATE_ENV)
    deadline = time.monotonic() + seconds
    if not gate:
        time.sleep(seconds)
        return
    held, release = gate_files(gate, point)
    held.touch()
    while not release.exists() and time.monotonic() < deadline:
        time.sleep(0.05)


def _is_armed_hit(point: str, armed_hit: int | None, hits: Counter[str]) -> bool:
    """Count a hit of an armed ``point``; whether it is the ``armed_hit``-th."""
    if armed_hit is None:
        return False
    hits[point] += 1
    return hits[point] == armed_hit


def _crash(point: str, hit: int) -> None:
    record = os.environ.get(CRASH_RECORD_ENV)
    if record:
        # One small O_APPEND write: whole even if processes of the group crash together, and
        # in the page cache (so visible to the supervisor) before the kill.
        fd = os.open(record, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{point}@{hit} pid={os.getpid()}\n".encode())
        finally:
            os.close(fd)
    group = os.environ.get(CRASH_PGID_ENV)
    if group:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(int(group), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)
