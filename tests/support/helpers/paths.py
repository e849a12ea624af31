"""Where the shared test code is, for a child process that imports it: its working directory
for ``python -m helpers.<module>``, or its ``PYTHONPATH``.

Only this folder goes on the path, never tests/ itself: tests/ mirrors the package, and its
folders named like libraries (delta/, kafka/) would import as those libraries where they are
not installed.
"""

from __future__ import annotations

from pathlib import Path

SHARED = Path(__file__).resolve().parent.parent
