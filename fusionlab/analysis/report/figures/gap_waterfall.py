"""The gap ledger as a waterfall per model (tables/gap_ledger.csv, sweep.gap_ledger): per
configuration and variant one panel, from 0 each named term in rank order (then the
unranked ones), the residual, and the gap they add up to (variant minus eager per
iteration, untraced; above 0 the variant is slower), its interval as an error bar."""
from __future__ import annotations

import math

import numpy as np

from fusionlab.analysis.report import style
from fusionlab.analysis.report.text import fmt_time
from fusionlab.analysis.sweep import gap_ledger, tables

# this module's figures (read as data by the package: no import, no matplotlib); `needs`
# names when the figure has something to draw (figures.NEEDS); the drawing function is
# the figure's name; its table: plots.load_tables' t["gap_ledger"], an input of its rule
FIGURES = [
    {
        'name': 'gap_waterfall',
        'scope': 'model',
        'category': '2. Where the time goes',
        'needs': 'compared',
        'caption': ('The gap to eager per iteration of {model} ({configs} configurations drawn; untraced; above 0 '
                    'the variant is slower) split into named host and GPU terms and a residual, which add up '
                    'to it (tables/gap_ledger.csv).'),
        'shows': 'each variant\'s gap to eager split into named host and GPU terms and a residual',
    },
]

TITLE = "Where the gap to eager comes from"
SIDE_COLOUR = {"host": "#ff7f0e", "gpu": "#1f77b4", "pairing": "#8c8c8c", "residual": "#d9d9d9", "total": "#000000"}
MAX_PANELS = 12


def _label(ms) -> dict:
    """A bar's label as a mark's text and fmt: its ledger row's ms as audit_figures.FORMATS
    writes it, signed; none under a thousandth of a microsecond (a sum's rounding: drawn 0)."""
    if not ms == ms or abs(ms) < 5e-7:
        return {}
    text = fmt_time(float(ms))
    return {"text": text if text.startswith("-") else "+" + text, "fmt": "ms"}


def _config_label(r: dict) -> str:
    size = "" if str(r.get("size", "default")) == "default" else f" {r['size']}"
    return f"{r['variant']} batch {int(float(r['batch']))}{size} {r['mode']} {r['dtype']}"


def gap_waterfall(t, model):
    """One waterfall panel per configuration of `model` in t["gap_ledger"] (module doc)."""
    led = t.get("gap_ledger")
    if led is None or led.empty:
        raise style.NoData("no gap ledger (tables/gap_ledger.csv): no variant with an eager run beside it")
    led = tables.with_size(led)
    led = led[led["model"] == model] if model else led
    if led.empty:
        raise style.NoData(f"no gap ledger rows for {model}")
    keys = [k for k in gap_ledger.KEYS if k in led]
    groups = list(led.groupby(keys, sort=True, dropna=False))[:MAX_PANELS]
    cols = min(len(groups), 3)
    rows = math.ceil(len(groups) / cols)
    bars = max(len(g) for _, g in groups)
    fig, axs = style.grid_figure(rows, cols, (max(1.2 + 0.62 * bars, 6.4 / cols) * cols, 3.9 * rows))
    for ax in axs.flat[len(groups):]:
        ax.set_visible(False)
    for ax, (_, g) in zip(axs.flat, groups):
        _panel(fig, ax, g)
    from matplotlib.patches import Patch
    names = {"host": "host side", "gpu": "GPU side", "pairing": "host speed between processes",
             "residual": "residual", "total": "gap (error bar: its interval)"}
    style.legend_below(fig, [Patch(facecolor=c, hatch="//" if s == "residual" else None, edgecolor="#555555")
                             for s, c in SIDE_COLOUR.items()], [names[s] for s in SIDE_COLOUR],
                      ncol=5 if cols > 1 else 3)
    style.title(fig, TITLE, t, model)
    return fig


def _panel(fig, ax, g) -> None:
    total = g[g["term"] == "total"].iloc[0].to_dict()
    terms = g[g["term"] != "total"].copy()
    terms["_r"] = terms["rank"].fillna(99)
    order = [t.name for t in gap_ledger.TERMS]
    terms["_o"] = terms["term"].map(order.index)
    terms = terms[(terms["ms"].fillna(0) != 0) | (terms["term"] == "residual")]
    terms = terms.assign(_last=terms["term"].eq("residual")).sort_values(["_last", "_r", "_o"])
    x, start = 0, 0.0
    labels = []
    steps = terms["ms"].fillna(0).cumsum().abs().tolist() + [abs(float(total["ms"]))]
    unit, scale = ("ms", 1.0) if max(steps, default=0) > 5 else ("us", 1e3)   # the axis's unit
    for r in terms.to_dict("records"):
        height = float(r["ms"]) * scale if r["ms"] == r["ms"] else 0.0
        ax.bar(x, height, bottom=start, color=SIDE_COLOUR.get(r["side"], "#999999"),
               hatch="//" if r["term"] == "residual" else None, edgecolor="#555555", linewidth=0.4)
        label = _label(r["ms"])
        ax.text(x, start + height, label.get("text", "0"), ha="center", va="bottom" if height >= 0 else "top",
                fontsize=6.5)
        style.record(fig, mark="bar", **style.keys_of(r, r["variant"]), term=r["term"], quantity="gap_ledger.ms",
                     value=float(r["ms"]) if r["ms"] == r["ms"] else np.nan, **label)
        labels.append(r["label"] if len(r["label"]) < 22 else r["term"].replace("_", " "))
        start += height
        x += 1
    gap_h = float(total["ms"]) * scale
    lo, hi = total.get("gap_lo_ms"), total.get("gap_hi_ms")
    err = None
    if lo == lo and hi == hi and lo is not None and hi is not None:
        err = [[max(gap_h - lo * scale, 0)], [max(hi * scale - gap_h, 0)]]
    ax.bar(x, gap_h, color=SIDE_COLOUR["total"], yerr=err, ecolor="#d62728", capsize=3)
    label = _label(total["ms"])
    ax.text(x, gap_h, label.get("text", "0"), ha="center", va="bottom" if gap_h >= 0 else "top", fontsize=7,
            fontweight="bold", zorder=5, bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.6, "alpha": 0.85})
    style.record(fig, mark="bar", **style.keys_of(total, total["variant"]), term="total", quantity="gap_ledger.ms",
                 value=float(total["ms"]), **label)
    labels.append("gap")
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=60, ha="right", fontsize=6.5)
    ax.set_ylabel(f"{unit} per iteration (+: adds to the variant)", fontsize=7)
    ax.set_title(f"{_config_label(total)}: {total['speedup']:.2f}x", fontsize=8)
    ax.use_sticky_edges = False     # room beyond the bars for their value labels
    ax.margins(y=0.18)
