"""The metric families the endpoint serves are the ones docs/operations.md lists, with the
same types."""

from __future__ import annotations

import re
from pathlib import Path

from kafka_share_eos.monitoring.families import FAMILIES, PREFIX

DOCS = Path(__file__).resolve().parents[2] / "docs"


def served() -> dict[str, str]:
    suffix = {"counter": "_total", "gauge": "", "histogram": ""}
    return {PREFIX + family.name + suffix[family.kind]: family.kind for family in FAMILIES}


def test_the_operations_page_lists_every_family_with_its_type() -> None:
    text = (DOCS / "operations.md").read_text()
    listed = dict(re.findall(r"^\| `(kafka_share_eos_\w+)` \| (\w+) \|", text, re.MULTILINE))
    assert listed == served()

