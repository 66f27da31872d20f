"""The look shared by every figure: one fixed colour per variant (eager first, black),
one-line titles with the setup (backend, device, dtype, mode) in a footer, values written
on bars, log axes labelled with plain numbers (0.5, 1, 2, 5; never 5x10^-1, and never a
single tick), text kept as text in SVG (svg.fonttype 'none').

A figure function raises NoData where it has nothing to draw; report.plots then writes
a small marker in place of the figure.

variant_colour(): one colour per variant, the same in every figure, from the variant's
place in the catalog (the variant names of experiments/catalog.json, sorted, as
sweep.registry_data.variant_names() reads them); eager is always black."""
from __future__ import annotations

import textwrap
import zlib

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter  # noqa: E402

from fusionlab.analysis.report.text import fmt_time  # noqa: E402,F401  (one way to write a time)
from fusionlab.analysis.sweep import registry_data  # noqa: E402

plt.rcParams.update({"svg.fonttype": "none", "font.size": 8, "axes.titlesize": 8, "axes.labelsize": 8,
                     "xtick.labelsize": 7, "ytick.labelsize": 7, "legend.fontsize": 7,
                     "axes.spines.top": False, "axes.spines.right": False})


class NoData(Exception):
    """A figure (or one model's figure) with nothing to draw; the message says why."""

# tab10, then the dark tab20b/tab20c shades: no pale colour (eager is black)
PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173",
           "#3182bd", "#e6550d", "#31a354", "#756bb1", "#636363", "#9c9ede"]
EAGER_COLOUR = "#000000"
MODEL_MARKERS = "osD^vP*XhpH<>d8"


def variant_colour(variant: str) -> str:
    if variant == "eager":
        return EAGER_COLOUR
    names = [v for v in registry_data.variant_names() if v != "eager"]
    if variant in names:
        return PALETTE[names.index(variant) % len(PALETTE)]
    return PALETTE[zlib.crc32(str(variant).encode()) % len(PALETTE)]   # not in the catalog: stable too


def variant_order(variants) -> list[str]:
    """Variants in the catalog's order (eager first), others after, sorted."""
    known = ["eager"] + [v for v in registry_data.variant_names() if v != "eager"]
    present = set(variants)
    return [v for v in known if v in present] + sorted(present - set(known))


def setup_label(df: pd.DataFrame) -> str:
    """'backend=nsys, device=cuda, ...': the values of the setup columns in df."""
    parts = []
    for col in ("backend", "device", "gpu", "dtype", "mode"):
        if col in df and df[col].notna().any():
            vals = sorted(set(df[col].dropna().astype(str)))
            parts.append(f"{col}={'/'.join(vals)}")
    return ", ".join(parts)


def figure(n: int = 1, w: float = 5.5, h: float = 4.2):
    """A figure of n panels side by side, each w x h inches: (figure, axes)."""
    fig, axes = plt.subplots(1, n, figsize=(w * n, h), squeeze=False, layout="constrained")
    return fig, axes[0]


def grid_figure(rows: int, cols: int, figsize: tuple[float, float]):
    """A figure of rows x cols panels: (figure, 2-d array of axes)."""
    return plt.subplots(rows, cols, squeeze=False, layout="constrained", figsize=figsize)


def empty(ax, text):
    """A panel with no data: text in its centre, no ticks."""
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, fontsize=9, wrap=True)
    ax.set_xticks([]); ax.set_yticks([])


def title(fig, what, t, model=None):
    """A one-line title (shortened to the figure's width) and the setup of t's runs as a
    footer."""
    chars = int(fig.get_figwidth() * 72 / (9.5 * 0.6))
    fig.suptitle(textwrap.shorten(f"{model + ': ' if model else ''}{what}", chars, placeholder="..."),
                 fontsize=9.5, fontweight="bold")
    sub = setup_label(t["runs"]) if "runs" in t else ""
    if sub:
        fig.supxlabel(textwrap.shorten(sub, int(chars * 1.4), placeholder="..."), fontsize=6.5, color="0.35")


def bar_values(ax, bars, values, fmt="{:.3g}", **kw):
    """Each bar's value (values, in the bars' order) written at its end."""
    ax.bar_label(bars, labels=[fmt.format(v) if v == v else "" for v in values], fontsize=6.5, padding=2, **kw)


def time_unit(ms_values) -> tuple[float, str]:
    """(factor, unit) to show times given in ms: us below 1 ms, else ms."""
    finite = [abs(v) for v in ms_values if v == v]
    return (1e3, "us") if finite and max(finite) < 1 else (1.0, "ms")



def plain(v, _pos=None) -> str:
    """A tick label as a plain number (1e4 and up, below 1e-3: short exponent form)."""
    if v <= 0:
        return "0"
    if v >= 1e4 or v < 1e-3:
        return f"{v:.0e}".replace("e+0", "e").replace("e-0", "e-")
    return f"{v:g}"


def log_axis(ax, axis="y", base=10):
    """A log axis with plain number labels at 1, 2, 5 x 10^k (base 10) or powers of 2."""
    a = ax.yaxis if axis == "y" else ax.xaxis
    (ax.set_yscale if axis == "y" else ax.set_xscale)("log", base=base)
    if base == 2:
        a.set_major_locator(LogLocator(base=2))
    else:
        a.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    a.set_major_formatter(FuncFormatter(plain))
    a.set_minor_formatter(NullFormatter())


def fit_log_ticks(ax, axis="y"):
    """Once the data are drawn: enough plain-number ticks for the axis's span (1 to 9 x
    10^k within a decade, 1, 2, 5 x 10^k over a few, 10^k beyond)."""
    a = ax.yaxis if axis == "y" else ax.xaxis
    lo, hi = (ax.get_ylim() if axis == "y" else ax.get_xlim())
    if lo <= 0 or hi <= 0:
        return
    span = np.log10(hi / lo)
    if span < 0.8:   # under a factor of 6: evenly spaced plain numbers (0.6, 0.8, 1, 1.2)
        a.set_major_locator(MaxNLocator(nbins=6, steps=[1, 2, 2.5, 5, 10]))
        a.set_major_formatter(FuncFormatter(plain))
        a.set_minor_formatter(NullFormatter())
        return
    subs = (1.0, 2.0, 3.0, 5.0) if span < 1.5 \
        else (1.0, 2.0, 5.0) if span < 4 else (1.0,)
    a.set_major_locator(LogLocator(base=10, subs=subs))
    a.set_major_formatter(FuncFormatter(plain))
    a.set_minor_formatter(NullFormatter())
    if len([v for v in a.get_major_locator()() if lo <= v <= hi]) < 3:   # never one lone tick
        a.set_major_locator(MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10]))


def plain_x_ticks(ax, values):
    """x ticks at exactly these values, labelled as plain numbers."""
    ax.set_xticks(sorted(values))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))


def legend(ax, **kw):
    """The panel's legend, if anything in it has a label."""
    h, lab = ax.get_legend_handles_labels()
    if h:
        ax.legend(**{"fontsize": 7, **kw})


def xlabel(axis):
    return "batch size" if axis == "batch" else axis


def at(fixed):
    """' at dim=1024' for the fixed values of the other axes ('' for none)."""
    return f" at {fixed}" if fixed else ""
