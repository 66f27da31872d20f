"""The crossover (tables/headline.csv): the headline speedup of every model and variant
along each model's main swept axis, as a grid whose colour turns where the variant starts
or stops beating eager; a value whose interval holds 1 is marked '?'."""
from __future__ import annotations

import textwrap

import numpy as np
from matplotlib.colors import TwoSlopeNorm

from fusionlab.analysis.report import style
from fusionlab.analysis.report.slicing import main_axis
from fusionlab.analysis.report.style import variant_colour, variant_order
from fusionlab.analysis.report.text import HOST_SKEWED, skewed


# this module's figures (read as data by the package: no import, no matplotlib); `needs`
# names when the figure has something to draw (figures.NEEDS); the drawing function is
# the figure's name
FIGURES = [
    {
        'name': 'crossover',
        'scope': 'sweep',
        'category': '5. Crossover',
        'needs': 'any_compared_swept_2',
        'caption': ('The headline speedup of each model and variant along its swept axis; a crossover lies '
                    'between the two values where the verdict turns from slower to faster. Verdicts: '
                    '{verdicts}.'),
        'shows': ('where each variant starts and stops beating eager along each axis'),
    },
]


LABEL_CHARS = 40   # a row label's line


def crossover(t, model):
    """A panel per swept axis: rows (model, variant), columns the axis's values."""
    h = t["headline"]
    h = h[(h["variant"] != "eager") & h["speedup"].notna()]
    slices = []
    cats = [c for c in ("mode", "dtype") if c in h and h[c].nunique() > 1]
    for key, g in h.groupby(["model"] + cats, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        m = " ".join(map(str, key))
        d, axis, fixed = main_axis(g)
        if d[axis].nunique() >= 2:
            slices.append((m, axis, fixed, d))
    if not slices:
        raise style.NoData("no model swept along an axis with 2 or more values")
    axes_swept = list(dict.fromkeys(a for _, a, _, _ in slices))
    rows_n = max(sum(d["variant"].nunique() for _, a, _, d in slices if a == ax) for ax in axes_swept)
    cols_n = max(len(set().union(*[set(d[ax]) for _, a, _, d in slices if a == ax])) for ax in axes_swept)
    longest = max(min(len(f"{m}, {v} ({f})"), LABEL_CHARS) for m, _, f, d in slices for v in d["variant"].unique())
    fig, axs = style.figure(len(axes_swept), w=2.6 + 0.8 * cols_n + 0.065 * longest, h=1.8 + 0.4 * rows_n)
    for ax, axis in zip(axs, axes_swept):
        mine = [(m, f, d) for m, a, f, d in slices if a == axis]
        values = sorted(set().union(*[set(d[axis]) for _, _, d in mine]))
        labels, m_rows, marks = [], [], []
        for m, f, d in mine:
            for v in variant_order(d["variant"].unique()):
                g = d[d["variant"] == v].set_index(axis)
                labels.append((textwrap.fill(f"{m}, {v}" + (f" ({f})" if f else ""), LABEL_CHARS), v))
                m_rows.append([g["speedup"].get(x, np.nan) for x in values])
                cells = []
                for x in values:
                    if x not in g.index:
                        cells.append("")
                        continue
                    r = g.loc[x].to_dict() | {axis: x}
                    keys = style.keys_of(r)
                    text = (f"{r['speedup']:.2f}x" + ("?" if r["verdict"] not in ("faster", "slower") else "")
                            + (f"\n{HOST_SKEWED}" if skewed(r) else ""))
                    cells.append(text)
                    style.record(fig, **keys, mark="cell", quantity="speedup", value=r["speedup"])
                    style.record(fig, **keys, mark="label", quantity="speedup", value=r["speedup"],
                                 text=text.replace("\n", " "))
                    if isinstance(r["verdict"], str):
                        style.record(fig, **keys, mark="style", quantity="verdict", text=r["verdict"])
                marks.append(cells)
        m_arr = np.array(m_rows, dtype=float)
        logs = np.log(np.where(m_arr > 0, m_arr, np.nan))
        reach = max(np.nanmax(np.abs(logs)), 0.05)
        im = ax.imshow(logs, cmap="RdBu_r", norm=TwoSlopeNorm(vcenter=0.0, vmin=-reach, vmax=reach), aspect="auto")
        for i in range(len(labels)):
            for j in range(len(values)):
                if np.isfinite(m_arr[i, j]):
                    rgba = im.cmap(im.norm(logs[i, j]))
                    dark = 0.299 * rgba[0] + 0.587 * rgba[1] + 0.114 * rgba[2] < 0.5
                    ax.text(j, i, marks[i][j], ha="center", va="center", fontsize=6.5,
                            color="white" if dark else "black")
        ax.set_xticks(range(len(values))); ax.set_xticklabels([f"{v:g}" for v in values], fontsize=7)
        ax.set_yticks(range(len(labels))); ax.set_yticklabels([lab for lab, _ in labels], fontsize=7)
        for tick, (_, v) in zip(ax.get_yticklabels(), labels):
            tick.set_color(variant_colour(v))
        ax.set_xlabel(style.xlabel(axis))
        ax.set_title(style.wrapped("red: above 1, blue: below 1; ?: no verdict (the interval holds 1, or one "
                                   f"repeat); {HOST_SKEWED}: timed on a slow host, one side host-bound",
                                   fig.get_figwidth() / len(axs) - 0.065 * longest - 0.5, 6.5),
                     fontsize=6.5, color="0.3")
    style.title(fig, "Speedup over eager along the swept axis", t, model)
    return fig
