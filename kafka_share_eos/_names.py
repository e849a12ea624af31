"""Arguments that name several things (columns, packages) where one name alone is common."""

from __future__ import annotations

from collections.abc import Iterable


def names(given: str | Iterable[str]) -> list[str]:
    """``given`` as a list of names: a string is one name, never its letters."""
    return [given] if isinstance(given, str) else list(given)
