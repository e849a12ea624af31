"""The frame of the proving ground's SVG charts: plain SVG text, no plotting library, so the
files read the same on GitHub and in the docs and the figures stay searchable text."""

from __future__ import annotations

from xml.sax.saxutils import escape


def chart_head(width: float, height: float, title: str, subtitle: str) -> list[str]:
    """The opening of a chart ``width`` by ``height`` on white, its title and a grey line under
    it saying how to read it; the caller adds its drawing and ``"</svg>"``."""
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="10" y="20" font-size="15" font-weight="bold">{escape(title)}</text>',
        f'<text x="10" y="38" fill="#555">{escape(subtitle)}</text>',
    ]
