"""The proving ground's charts as SVG files drawn by matplotlib (the ``charts`` extra).

Their text stays text (``svg.fonttype`` ``none``), so a figure in a chart can be searched for
on GitHub and in the docs like one in a table; and a chart drawn twice from the same data is
the same file (a fixed hash salt for its element ids, no date), so redrawing one leaves git
nothing to show. The figure is drawn without pyplot or a display: nothing global is touched
but matplotlib's settings, and only for the drawing.
"""

from __future__ import annotations

import argparse
import io
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_share_eos._extras import CHARTS

if TYPE_CHECKING:
    import matplotlib as matplotlib
    from matplotlib import figure as mpl_figure
    from matplotlib import transforms as transforms
    from matplotlib.figure import Figure
    from matplotlib.typing import RcKeyType
else:
    matplotlib = CHARTS.lazy("matplotlib")
    mpl_figure = CHARTS.lazy("matplotlib.figure")
    transforms = CHARTS.lazy("matplotlib.transforms")

STYLE: dict[RcKeyType, Any] = {
    "svg.fonttype": "none",
    "svg.hashsalt": "kafka-share-eos",
    "font.family": "sans-serif",
    # The font the text was measured in (matplotlib's own), then one of its width; each
    # <text> names them all, so the list is kept short.
    "font.sans-serif": ["DejaVu Sans", "Verdana"],
    # A "$" in a label is a dollar, not the start of a formula.
    "text.parse_math": False,
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
}
"""matplotlib's settings while a chart is drawn and saved."""
TITLE_SIZE = 12
SUBTITLE_DROP = 5 + TITLE_SIZE * 1.2
"""Points from the top of the figure to the subtitle: the layout's margin and a title line."""
SUBTITLE_COLOUR = "#555555"


def svg_chart(feature: str, size: tuple[float, float], title: str, subtitle: str,
              draw: Callable[[Figure], None]) -> str:
    """The SVG text of a ``size`` (inches) figure headed by ``title`` and a grey ``subtitle``
    saying how to read it, whose axes ``draw`` adds.

    Raises:
        MissingExtraError: matplotlib is not installed; ``feature`` names what wanted it.
    """
    CHARTS.require(feature)
    with matplotlib.rc_context(STYLE):
        figure = mpl_figure.Figure(figsize=size, layout="constrained")
        # The title's second line is left blank for the subtitle, in a lighter font: the
        # layout makes room for a figure's title, not for other text above its axes.
        figure.suptitle(f"{title}\n", x=0.01, ha="left", fontsize=TITLE_SIZE,
                        fontweight="bold")
        under_title = transforms.ScaledTranslation(0, -SUBTITLE_DROP / 72,
                                                   figure.dpi_scale_trans)
        figure.text(0.01, 1, subtitle, ha="left", va="top", color=SUBTITLE_COLOUR,
                    transform=figure.transFigure + under_title)
        draw(figure)
        out = io.StringIO()
        figure.savefig(out, format="svg", metadata={"Date": None})
    return out.getvalue()


def redraw_each(description: str, redraw: Callable[[Path], Path]) -> None:
    """The command line of a chart drawn again from the JSON saved beside it: ``redraw`` each
    file named, printing the chart it wrote."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("saved", type=Path, nargs="+", help="a saved .json")
    for saved in parser.parse_args().saved:
        print(redraw(saved))
