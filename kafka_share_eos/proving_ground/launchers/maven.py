"""Jars from Maven Central: an artifact and everything it needs at run time, copied by Maven
into one directory.

Maven resolves the dependency tree (versions, exclusions, scopes) and keeps what it downloads in
its own repository (``~/.m2``), so a second directory of the same jars costs no download.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from kafka_share_eos.errors import KafkaShareEosError

FETCH_TIMEOUT_S = 900.0
_ANSI = re.compile(r"\x1b\[[0-9;]*m")

_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kafka-share-eos</groupId>
  <artifactId>fetched-jars</artifactId>
  <version>1</version>
  <dependencies>
{dependencies}
  </dependencies>
</project>
"""
_DEPENDENCY = """    <dependency>
      <groupId>{0}</groupId><artifactId>{1}</artifactId><version>{2}</version>{3}
    </dependency>"""


def copy_dependencies(
    artifacts: Sequence[str], libs: Path, *, what: str, error: type[KafkaShareEosError]
) -> None:
    """Copy ``artifacts`` (``group:artifact:version``, or ``group:artifact:version:classifier``
    for a jar such as a ``tests`` one) and their run-time dependencies into ``libs``, emptied
    first.

    Raises:
        error: Maven is missing, took over :data:`FETCH_TIMEOUT_S`, or failed (the message names
            ``what`` and Maven's reason).
    """
    mvn = shutil.which("mvn")
    if mvn is None:
        raise error(
            f"fetching {what} needs Maven and no 'mvn' is on PATH: "
            "install it (e.g. apt install maven)"
        )
    shutil.rmtree(libs, ignore_errors=True)
    dependencies = "\n".join(_dependency(artifact) for artifact in artifacts)
    with tempfile.TemporaryDirectory(prefix="kse-maven-") as work:
        pom = Path(work, "pom.xml")
        pom.write_text(_POM.format(dependencies=dependencies))
        command = [
            # --update-snapshots also retries releases whose earlier fetch failed, which Maven
            # otherwise remembers and refuses to fetch again for a day.
            mvn, "--batch-mode", "--quiet", "--update-snapshots", "--file", str(pom),
            "dependency:copy-dependencies", "-DincludeScope=runtime",
            f"-DoutputDirectory={libs}",
        ]
        try:
            outcome = subprocess.run(
                command, capture_output=True, text=True, timeout=FETCH_TIMEOUT_S, check=False
            )
        except subprocess.TimeoutExpired:
            raise error(f"fetching {what} with Maven took over {FETCH_TIMEOUT_S:.0f} s") from None
    if outcome.returncode != 0:
        raise error(f"fetching {what} with Maven failed: {_maven_reason(outcome)}")


def _dependency(artifact: str) -> str:
    group, name, version, *classifier = artifact.split(":")
    extra = "".join(f"<classifier>{part}</classifier>" for part in classifier)
    return _DEPENDENCY.format(group, name, version, extra)


def _maven_reason(outcome: subprocess.CompletedProcess[str]) -> str:
    """The line of Maven's output that says what went wrong."""
    text = _ANSI.sub("", outcome.stdout + outcome.stderr)
    lines = [line.strip() for line in text.splitlines()]
    errors = [line.removeprefix("[ERROR]").strip() for line in lines if line.startswith("[ERROR]")]
    advice = ("->", "Re-run", "To see", "For more information", "[Help")
    meaningful = [line.split(" -> [Help")[0] for line in errors
                  if line and not line.startswith(advice)]
    if meaningful:
        return meaningful[0]
    return next((line for line in reversed(lines) if line), f"exit code {outcome.returncode}")
