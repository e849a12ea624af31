"""A journal whose disk is full: the query fails with an error naming the segment's path and the
OS error, none of the records of that poll is acknowledged, and once space is back a restart on
the same checkpoint and journal applies every record exactly once.

Where a tmpfs can be mounted (as root) the journal is one of 256 KiB filled to the last block;
elsewhere its directory is made read-only, and the writes fail for want of permission instead
of space.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.messages import messages

from kafka_share_eos import EmbeddedBroker
from kafka_share_eos.journal import Journal, JournalError
from kafka_share_eos.journal.leases import LEASES_DIR, RUNNER, Leases
from kafka_share_eos.journal.metrics_store import METRICS_DIR
from kafka_share_eos.proving_ground.verify.known_targets import TARGETS
from kafka_share_eos.proving_ground.verify.pipeline import PipelineConfig
from kafka_share_eos.proving_ground.verify.process import Exit, PipelineProcess
from kafka_share_eos.proving_ground.verify.records import plan_records, produce
from kafka_share_eos.proving_ground.verify.score import score
from kafka_share_eos.proving_ground.verify.targets import RunContext, dead_lettered
from kafka_share_eos.source.conversion import to_record_batch

pytestmark = pytest.mark.timeout(300)

RECORDS = 60
# Short, so that a restart never waits long for records a failed run may still hold locked.
LOCK_MS, SESSION_TIMEOUT_MS = 5000, 4000
FILLER = "filler"


@dataclasses.dataclass(frozen=True)
class FullDisk:
    """A journal directory nothing can be written to until :meth:`make_room`."""

    journal: Path
    os_error: str
    """How the OS error reads in messages: ``[Errno 28] No space left on device``."""
    mounted: bool
    read_only: tuple[Path, ...]

    def make_room(self) -> None:
        """Give the journal its space (or its write permission) back."""
        if self.mounted:
            (self.journal / FILLER).unlink()
        for directory in self.read_only:
            directory.chmod(0o755)


@contextlib.contextmanager
def full_disk(
    journal: Path, beside: Path, elsewhere: tuple[str, ...] = (LEASES_DIR, METRICS_DIR)
) -> Iterator[FullDisk]:
    """A full small disk at ``journal``, unmounted when the block ends.

    The journal's directories named in ``elsewhere`` (its leases, its metrics) are symbolic
    links to ``beside``, off the full disk: their files take a block each, so on a disk full
    to the last block they would fail first, and the write these tests are about is the
    segment's. The others are created on it, full as well.
    """
    journal.mkdir(parents=True)
    mount = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(journal)],
                           capture_output=True, text=True, check=False)
    mounted = mount.returncode == 0
    # Without the privilege to mount, a directory read-only for its (unprivileged) owner.
    read_only = () if mounted else (
        journal, *[journal / name for name in (LEASES_DIR, METRICS_DIR) if name not in elsewhere]
    )
    try:
        for name in (LEASES_DIR, METRICS_DIR):
            if name in elsewhere:
                (beside / name).mkdir(parents=True)
                (journal / name).symlink_to(beside / name, target_is_directory=True)
            else:
                (journal / name).mkdir()
        if mounted:
            _fill(journal / FILLER)
        for directory in read_only:
            directory.chmod(0o555)
        if not mounted and _writable(journal):
            pytest.fail(f"no tmpfs could be mounted ({mount.stderr.strip()}) and a read-only "
                        "directory does not refuse this user's writes: run as root with the "
                        "right to mount, or as a user without it")
        code = errno.ENOSPC if mounted else errno.EACCES
        yield FullDisk(journal, f"[Errno {code}] {os.strerror(code)}", mounted, read_only)
    finally:
        if mounted:
            # Lazily: a process of the pipeline still closing a file must not leave it mounted.
            subprocess.run(["umount", "--lazy", str(journal)], check=True, capture_output=True)
        for directory in read_only:
            directory.chmod(0o755)


def _writable(directory: Path) -> bool:
    probe = directory / ".probe"
    try:
        probe.touch()
    except PermissionError:
        return False
    probe.unlink()
    return True


def _fill(path: Path) -> None:
    block = b"\0" * 4096
    with path.open("wb", buffering=0) as out:
        try:
            while True:
                out.write(block)
        except OSError as error:
            if error.errno != errno.ENOSPC:
                raise


def test_a_segment_write_on_a_full_disk_names_its_path_and_leaves_nothing(
    tmp_path: Path,
) -> None:
    """Each segment write fails with a JournalError naming the file and the OS error (its
    cause), and leaves no temp file taking space."""
    journal_dir = tmp_path / "journal"
    batch = to_record_batch(messages()[:3])  # not the one of 1 MB, larger than the disk
    with full_disk(journal_dir, tmp_path / "beside") as disk:
        journal = Journal(str(journal_dir))
        for write, name in [
            (lambda: journal.write(1, batch), "00000000000000000001.arrow"),
            (lambda: journal.write_slot(2, 3, batch), "00000000000000000002-0003.arrow"),
        ]:
            with pytest.raises(JournalError, match="could not write journal segment") as failed:
                write()
            assert f"at {journal_dir}/{name}: {disk.os_error}" in str(failed.value)
            assert isinstance(failed.value.__cause__, OSError)
        left = {LEASES_DIR, METRICS_DIR} | ({FILLER} if disk.mounted else set())
        assert {path.name for path in journal_dir.iterdir()} == left
        disk.make_room()
        journal.write(1, batch)
        assert journal.sequences() == [1]


def test_a_lease_write_on_a_full_disk_names_its_path(tmp_path: Path) -> None:
    """A consumer's lease, written before its polls, fails the same way when it is the first
    write to find the disk full."""
    journal_dir = tmp_path / "journal"
    with full_disk(journal_dir, tmp_path / "beside", elsewhere=(METRICS_DIR,)) as disk:
        with pytest.raises(JournalError, match="could not write lease") as failed:
            Leases(str(journal_dir)).lease(RUNNER).renew("run", 1.0)
        assert f"{journal_dir}/{LEASES_DIR}/" in str(failed.value)
        assert disk.os_error in str(failed.value)
        assert list((journal_dir / LEASES_DIR).iterdir()) == []


@pytest.mark.parametrize("acknowledge", ["afterCommit", "afterJournal"])
def test_a_query_on_a_full_journal_disk_fails_and_resumes_exactly_once(
    tmp_path: Path, acknowledge: str
) -> None:
    """The first run fails at its first journal write, naming the segment and the OS error;
    after space is freed, a restart on the same checkpoint and journal drains every record
    exactly once: none was acknowledged without its segment, or it would be lost."""
    topic = f"full-{tmp_path.name[-12:]}".replace("_", "-")
    with EmbeddedBroker(
        record_lock_duration_ms=LOCK_MS, session_timeout_ms=SESSION_TIMEOUT_MS,
        heartbeat_interval_ms=500,
    ) as broker:
        broker.create_topic(topic, 3)
        planned = plan_records(RECORDS, "journal-full-disk", bad_records=False)
        produced = produce(broker.bootstrap_servers, topic, planned, 3)
        ctx = RunContext(tmp_path / "run")
        ctx.run_dir.mkdir()
        target = TARGETS["upsert-sqlite"]()
        target.setup(ctx, planned)
        ctx.dead_letters().close()
        config = PipelineConfig(
            target=target.name, run_dir=str(ctx.run_dir),
            bootstrap_servers=broker.bootstrap_servers, topic=topic, group_id="full-" + topic,
            max_records_per_trigger=15, idle_ms=2000, acknowledge=acknowledge,
            lock_duration_ms=LOCK_MS, session_timeout_ms=SESSION_TIMEOUT_MS,
        )
        config_path = ctx.run_dir / "config.json"
        config.save(config_path)
        journal = Path(config.journal("a"))
        record = ctx.run_dir / "crashes.log"

        with full_disk(journal, tmp_path / "beside") as disk:
            log = ctx.run_dir / "full.log"
            failed = PipelineProcess(config_path, "a", log, None, record).wait(120)
            output = log.read_text(errors="replace")
            assert failed is Exit.FAILED, output[-3000:]
            assert f"could not write journal segment 1 at {journal}/" in output, output[-3000:]
            assert disk.os_error in output
            # Its consumer left the group (and deleted its lease): the poll it could not
            # journal went back to the share group unacknowledged.
            assert list((tmp_path / "beside" / LEASES_DIR).iterdir()) == []
            disk.make_room()
            log = ctx.run_dir / "drain.log"
            drained = PipelineProcess(config_path, "a", log, None, record).wait(120)
            assert drained is Exit.DRAINED, log.read_text()[-3000:]

        counted = score(target.landed(ctx, produced), produced, dead_lettered(ctx))
        assert (counted.records, counted.duplicates, counted.losses) == (RECORDS, 0, 0), counted
