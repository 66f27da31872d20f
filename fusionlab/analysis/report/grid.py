"""Sweep-wide figures of a large sweep as a grid (rows: models, columns: variants, the
value written in each cell) instead of bars: above MAX_BARS bars a strip of bars grows
thousands of pixels wide."""
from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd
from matplotlib.colors import LogNorm, TwoSlopeNorm

from fusionlab.analysis.report.style import variant_colour, variant_order

MAX_BARS = 24


def grid(ax, values: pd.Series, fmt: str, label: str, centre: float | None = None, cmap: str = "viridis",
         rows: list | None = None, cols: list | None = None):
    """values indexed by (row label, variant), drawn as a grid with each value written in
    its cell; a cell with no value is left blank, one <= 0 is written on white. centre: a
    diverging colour scale around it (log-symmetric, for ratios); else a log scale over at most 3 decades
    below the largest value (smaller ones take its lowest colour). rows, cols: the grid's
    order (two panels side by side share it); by default those of values."""
    rows = rows if rows is not None else list(dict.fromkeys(values.index.get_level_values(0)))
    cols = cols if cols is not None else variant_order(values.index.get_level_values(1))
    m = values.unstack().reindex(index=rows, columns=cols).to_numpy(dtype=float)
    finite = m[np.isfinite(m) & (m > 0)]
    if centre is not None and finite.size:
        lo, hi = np.log(finite.min() / centre), np.log(finite.max() / centre)
        reach = max(abs(lo), abs(hi), 1e-3)
        norm = TwoSlopeNorm(vcenter=0.0, vmin=-reach, vmax=reach)
        shown = np.log(np.where(m > 0, m, np.nan) / centre)
        im = ax.imshow(shown, cmap="RdBu_r", norm=norm, aspect="auto")
    else:
        low = max(finite.min(), finite.max() * 1e-3) if finite.size else None
        norm = LogNorm(vmin=low, vmax=max(finite.max(), low * 1.01), clip=True) if finite.size else None
        im = ax.imshow(np.where(m > 0, m, np.nan), cmap=cmap, norm=norm, aspect="auto")
    for i in range(len(rows)):
        for j in range(len(cols)):
            if np.isfinite(m[i, j]):   # a value <= 0 (off a log scale) is written on white
                rgba = im.cmap(im.norm(shown[i, j] if centre is not None else m[i, j])) if m[i, j] > 0 else (1, 1, 1)
                dark = 0.299 * rgba[0] + 0.587 * rgba[1] + 0.114 * rgba[2] < 0.5
                ax.text(j, i, format(m[i, j], fmt), ha="center", va="center", fontsize=6.5,
                        color="white" if dark else "black")
    ax.set_xticks(range(len(cols)))
    ax.set_xticklabels(cols, rotation=60, ha="right", fontsize=7)
    for tick, v in zip(ax.get_xticklabels(), cols):
        tick.set_color(variant_colour(v))
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(rows, fontsize=7)
    # wrapped to the cells' width (a few columns make a narrow panel)
    ax.set_title(textwrap.fill(label, max(30, int(len(cols) * 0.48 * 72 / (8 * 0.55)))), fontsize=8)


def grid_size(rows: int, cols: int) -> tuple[float, float]:
    """Inches (width, height) of one grid panel of rows x cols cells, with its labels."""
    return 1.6 + 0.48 * cols, 1.8 + 0.3 * rows
