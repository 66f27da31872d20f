"""The suite at a glance (tables/suite.csv, analysis.sweep.suite, and tables/headline.csv),
as PyTorch's performance dashboard shows a compiler suite: per variant, mode and dtype the
geometric mean speedup with its interval, the pass rate and the median compile time; and
a model x variant heat map of each model's geometric mean speedup in each setting."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from fusionlab.analysis.report import style
from fusionlab.analysis.report.grid import grid, grid_size
from fusionlab.analysis.report.style import variant_colour, variant_order

# this module's figures (read as data by the package: no import, no matplotlib); `needs`
# names when the figure has something to draw (figures.NEEDS); the drawing function is
# the figure's name
FIGURES = [
    {
        'name': 'suite',
        'scope': 'sweep',
        'category': '1. Headline',
        'needs': 'any_compared',
        'caption': ('The suite per variant, mode and dtype (tables/suite.csv): the geometric mean speedup '
                    'over eager of the configurations compared, with its interval where every one has its '
                    'own; the pass rate; the median compile time; and per model and setting the geometric '
                    'mean speedup of its configurations (tables/headline.csv).'),
        'shows': ('the suite: geometric mean speedup with its interval, pass rate and compile time per '
                  'variant, mode and dtype, and a model x variant heat map'),
    },
]


def _geomean(s: pd.Series) -> float:
    s = pd.to_numeric(s, errors="coerce")
    s = s[s > 0]
    return math.exp(np.log(s).mean()) if len(s) else math.nan


def suite(t, model):
    """Left to right: geometric mean speedup (log axis, the interval as a bar where the
    suite row has one, the value and verdict written), pass rate, median compile time, one
    row per variant, mode and dtype in its colour; then the heat map (rows: model and
    setting, columns: variants) of the geometric mean of each model's speedups."""
    s = t.get("suite")
    if s is None or s.empty:
        raise style.NoData("no tables/suite.csv")
    s = s[s["variant"] != "eager"].copy()
    if s.empty:
        raise style.NoData("no variant besides eager in the suite")
    s["_o"] = s["variant"].map({v: i for i, v in enumerate(variant_order(s["variant"].unique()))})
    s = s.sort_values(["mode", "dtype", "_o"]).reset_index(drop=True)
    h = t["headline"]
    h = h[(h["variant"] != "eager") & (pd.to_numeric(h["speedup"], errors="coerce") > 0)]
    heat = (h.assign(row=h["model"] + " " + h["mode"].astype(str) + " " + h["dtype"].astype(str))
            .groupby(["row", "variant"])["speedup"].apply(_geomean)) if len(h) else pd.Series(dtype=float)
    rows = len(s)
    hw, hh = grid_size(heat.index.get_level_values(0).nunique() if len(heat) else 1,
                       heat.index.get_level_values(1).nunique() if len(heat) else 1)
    fig, axs = style.grid_figure(1, 4, figsize=(11.5 + hw, max(3.2, 1.2 + 0.34 * rows, hh)))
    ax, px, cx, mx = axs[0]
    y = np.arange(rows)[::-1]
    labels = [f"{r['variant']}\n{r['mode']} {r['dtype']}" for _, r in s.iterrows()]
    for yi, (_, r) in zip(y, s.iterrows()):
        keys = {"variant": r["variant"], "mode": r["mode"], "dtype": r["dtype"]}
        c = variant_colour(r["variant"])
        g = r["geomean_speedup"]
        if g == g:
            ax.scatter([g], [yi], color=c, s=30, zorder=3)
            if r["geomean_lo"] == r["geomean_lo"]:   # dotted: no verdict from it (not every speedup has its own)
                solid = r["verdict"] != "no interval"
                ax.plot([r["geomean_lo"], r["geomean_hi"]], [yi, yi], color=c, lw=2.2 if solid else 1.2,
                        alpha=0.6, ls="-" if solid else ":")
                style.record(fig, **keys, mark="interval low", quantity="suite.geomean_lo", value=r["geomean_lo"])
                style.record(fig, **keys, mark="interval high", quantity="suite.geomean_hi", value=r["geomean_hi"])
            text = style.noted(fig, "x2f", g, **keys, mark="point", quantity="suite.geomean_speedup")
            ax.annotate(f"{text} ({r['verdict']})", (max(g, r["geomean_hi"] if r["geomean_hi"] == r["geomean_hi"]
                                                         else g), yi), xytext=(4, 0), textcoords="offset points",
                        va="center", fontsize=6)
        pr = r["pass_rate"]
        px.barh(yi, 100 * pr, color=c, height=0.6)
        px.text(100 * pr + 1, yi, f"{int(r['n_pass'])}/{int(r['n_configs'])}", va="center", fontsize=6)
        style.record(fig, **keys, mark="bar", quantity="suite.n_pass", value=r["n_pass"])
        style.record(fig, **keys, mark="bar", quantity="suite.pass_rate", value=pr)
        cs = r["compile_s_median"]
        if cs == cs:
            cx.barh(yi, cs, color=c, height=0.6)
            cx.text(cs, yi, " " + style.noted(fig, "s", cs, **keys, mark="bar", quantity="suite.compile_s_median"),
                    va="center", fontsize=6)
    for a in (ax, px, cx):
        a.set_yticks(y)
        a.set_yticklabels(labels if a is ax else [""] * rows, fontsize=6.5)
        a.set_ylim(-0.6, rows - 0.4)
    for tick, v in zip(ax.get_yticklabels(), s["variant"]):
        tick.set_color(variant_colour(v))
    ax.axvline(1.0, color="grey", lw=0.8, ls="--")
    style.log_axis(ax, "x")
    ax.margins(x=0.25)
    style.fit_log_ticks(ax, "x")
    ax.set_xlabel("geometric mean speedup over eager (solid: its interval;\ndotted: no verdict, not every "
                  "speedup has its own interval)")
    px.set_xlim(0, 118)
    px.set_xlabel("pass rate (%): configurations ok")
    cx.set_xlabel("median compile time (s)")
    cx.margins(x=0.3)
    if len(heat):
        for (row, v), val in heat.items():
            m, mode, dtype = row.rsplit(" ", 2)
            style.noted(fig, "2f", val, model=m, variant=v, mode=mode, dtype=dtype, mark="cell",
                        quantity="headline.speedup", agg="geomean")
        grid(mx, heat, ".2f", "geometric mean speedup per model and setting (red: faster than eager)", centre=1.0)
    else:
        style.empty(mx, "no speedup in tables/headline.csv")
    style.title(fig, "The suite: speedup, pass rate, compile time, and speedup per model", t, model)
    return fig
