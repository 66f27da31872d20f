"""Whether a figure is legible: the texts it draws (titles, tick labels within view, axis
labels, annotations, legends) that overlap another or reach beyond its edges, as the
figure tests check every figure."""
from __future__ import annotations

import matplotlib

from fusionlab.analysis.report.style import overlap, renderer


def _drawn_texts(fig) -> list:
    """The visible, non-empty texts fig draws: tick labels only for ticks within view."""
    ticks = set()
    shown = []
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                ticks.update((tick.label1, tick.label2))
                if lo - 1e-9 * abs(hi - lo) <= tick.get_loc() <= hi + 1e-9 * abs(hi - lo):
                    shown += [tick.label1, tick.label2]
    texts = [t for t in fig.findobj(matplotlib.text.Text) if t not in ticks] + shown
    return [t for t in texts if t.get_visible() and t.get_text().strip()]


def _boxes(t, r) -> list:
    """A text's box, or for a text at a slant, boxes along its slanted band."""
    from matplotlib.transforms import Bbox
    b = t.get_window_extent(r)
    angle = t.get_rotation() % 180
    if min(angle, abs(angle - 90)) < 1 or b.width < 1 or b.height < 1:
        return [b]
    n = max(2, len(t.get_text()))
    thick = t.get_fontsize() * t.figure.dpi / 72
    up = 0 < angle < 90
    out = []
    for i in range(n):
        x0 = b.x0 + b.width * i / n
        y = b.y0 + b.height * ((i + 0.5) / n if up else 1 - (i + 0.5) / n)
        out.append(Bbox.from_extents(x0, y - thick / 2 - b.height / n / 2, x0 + b.width / n,
                                     y + thick / 2 + b.height / n / 2))
    return out


def text_overlaps(fig, texts=None) -> list[tuple[str, str]]:
    """The pairs of texts fig draws (all of them: titles, tick labels within view, axis
    labels, annotations, legends; or only texts) whose boxes overlap, as their strings."""
    r = renderer(fig)
    if texts is None:
        texts = _drawn_texts(fig)
    boxes = [(t.get_text(), _boxes(t, r)) for t in texts]
    return [(a, b) for i, (a, ba) in enumerate(boxes) for b, bb in boxes[i + 1:]
            if any(overlap(x, y) > 1.0 for x in ba for y in bb)]


def texts_outside(fig) -> list[str]:
    """The texts fig draws that reach beyond its edges (clipped in the file)."""
    r = renderer(fig)
    w, h = fig.bbox.width, fig.bbox.height
    return [t.get_text() for t in _drawn_texts(fig)
            if (lambda b: b.x0 < -1 or b.y0 < -1 or b.x1 > w + 1 or b.y1 > h + 1)(t.get_window_extent(r))]
