"""The measurement's own cost: the profiler overhead of each run (the runs table)."""
from __future__ import annotations

import numpy as np
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from fusionlab.analysis.report import style
from fusionlab.analysis.report.grid import MAX_BARS, grid, grid_size
from fusionlab.analysis.report.slicing import with_setting
from fusionlab.analysis.report.style import variant_colour, variant_order
from fusionlab.analysis.sweep import tables


# this module's figures (read as data by the package: no import, no matplotlib); `needs`
# names when the figure has something to draw (figures.NEEDS); the drawing function is
# the figure's name
FIGURES = [
    {
        'name': 'profiler_overhead',
        'scope': 'sweep',
        'category': '7. Measurement',
        'needs': 'models',
        'caption': ('Wall time per iteration under tracing over the untraced loop, per run: {prof}. Wall '
                    'times, speedups and idle shares come from the untraced loop.'),
        'shows': ('traced / untraced wall time per run'),
    },
]


def profiler_overhead(t, model):
    """The profiler's own cost per run: traced / untraced wall time per iteration, each
    repeat a hollow dot, the median a bar, in the variant's colour; for a large sweep a grid of
    the medians (rows: model, batch and setting, columns: variants)."""
    r = t["runs"]
    r = r[(r["status"] == "ok")].dropna(subset=["profiler_overhead"]) if "profiler_overhead" in r else r.iloc[:0]
    r = with_setting(tables.with_size(r))   # each setting (mode and dtype) its own bar or row
    keys = r.groupby(["model", "batch", "size", "setting", "variant"]).size().index.tolist() if len(r) else []
    order = {v: i for i, v in enumerate(variant_order({k[-1] for k in keys}))}
    keys = sorted(keys, key=lambda k: (*k[:-1], order[k[-1]]))   # eager first in each configuration
    title = "The profiler's own cost: traced / untraced wall time per iteration"
    if len(keys) > MAX_BARS:
        row = (r["model"] + " " + r["batch"].astype(str) + np.where(r["size"] == "default", "", " " + r["size"].astype(str))
               + np.where(r["setting"] == "", "", " " + r["setting"]))
        r = r.assign(row=row)
        med = r.groupby(["row", "variant"], sort=False)["profiler_overhead"].median()
        w, h = grid_size(med.index.get_level_values(0).nunique(), med.index.get_level_values(1).nunique())
        fig, (ax,) = style.figure(w=w + 1.5, h=h)
        for _, g in r.groupby(["row", "variant"], sort=False):   # each cell: its text is grid's .2f
            style.noted(fig, "2f", g["profiler_overhead"].median(), **style.keys_of(g.iloc[0]), mark="cell",
                        quantity="runs.profiler_overhead", agg="median")
        grid(ax, med, ".2f", "traced / untraced wall time per iteration, median of repeats "
             "(red: tracing slowed the run)", centre=1.0)
        style.title(fig, "The profiler's own cost per run (rows: model, batch and setting)", t, model)
        return fig
    if not keys:
        raise style.NoData("no run with both a traced and an untraced wall time")
    fig, (ax,) = style.figure(w=max(5.5, 1.2 + 0.36 * len(keys)), h=4.8)
    for i, (m, b, sz, st, v) in enumerate(keys):
        g = r[(r["model"] == m) & (r["batch"] == b) & (r["size"] == sz) & (r["setting"] == st)
              & (r["variant"] == v)]["profiler_overhead"]
        rows = r[(r["model"] == m) & (r["batch"] == b) & (r["size"] == sz) & (r["setting"] == st) & (r["variant"] == v)]
        own = style.keys_of(rows.iloc[0])
        ax.bar(i, g.median() - 1, bottom=1, color=variant_colour(v), width=0.7)
        ax.scatter(np.full(len(g), i), g, color="white", edgecolors=variant_colour(v), linewidths=0.9, s=16,
                   zorder=3)
        for _, one in rows.iterrows():
            style.record(fig, **own, repeat=int(one["repeat"]), mark="repeat", quantity="runs.profiler_overhead",
                         value=one["profiler_overhead"])
        text = style.noted(fig, "x2f", g.median(), **own, mark="bar", quantity="runs.profiler_overhead", agg="median")
        ax.annotate(text, (i, max(g.max(), 1.0)), xytext=(0, 3), textcoords="offset points", ha="center", fontsize=6)
    ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    ratios = r["profiler_overhead"][r["profiler_overhead"] > 0]
    if len(ratios) and max(ratios.max(), 1) / min(ratios.min(), 1) > 20:   # decades apart: a log scale
        style.log_axis(ax, "y")
        style.fit_log_ticks(ax, "y")
    ax.set_xticks(range(len(keys)))
    ax.set_xticklabels([f"{m} bs {b:g}{'' if sz == 'default' else ' ' + sz}{' ' + st if st else ''}  {v}"
                        for m, b, sz, st, v in keys], rotation=90, fontsize=6.5)
    for tick, (*_, v) in zip(ax.get_xticklabels(), keys):
        tick.set_color(variant_colour(v))
    ax.set_ylabel("traced / untraced wall time\nper iteration")
    style.legend_below(fig, [Patch(facecolor="0.5", label="median of the repeats (bar, written above)"),
                             Line2D([], [], ls="none", marker="o", mfc="white", mec="0.4", label="one repeat")],
                       fontsize=6.5)
    ax.margins(y=0.12)
    style.title(fig, title, t, model)
    return fig
