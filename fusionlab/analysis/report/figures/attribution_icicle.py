"""Where a model's kernel time goes, eager against a compiled variant: two icicle charts
(tables/attribution.csv) on one time axis, the model's module tree from the top (the
whole model) down, each module as wide as its kernel time per iteration (its submodules'
included). Eager's modules are coloured by the model's top-level part they belong to; the
variant's by its time against eager's for the same module (green: less, red: more). A
module is labelled where its box is wide enough for its name; depth is cut at MAX_DEPTH
(deeper modules' time stays in their ancestor at that depth), so that a network of
hundreds of modules stays readable.

FIGURE_RECORD is this figure's record in the figures package's form; it becomes a figure of
the sweep once it is named FIGURES here and report.plots.load_tables loads
tables/attribution.csv as tables["attribution"]."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from fusionlab.analysis.report import style

FIGURE_RECORD = [
    {
        'name': 'attribution_icicle',
        'scope': 'model',
        'category': '3. Kernels and fusion',
        'needs': 'compared',
        'caption': ('Kernel time per iteration of {model} by module, eager (top) against a compiled variant '
                    '(bottom), on one time axis (first repeat, one configuration).'),
        'shows': ('which modules of the model the compiled variant makes faster or slower'),
    },
]

MAX_DEPTH = 6
LABEL_FRACTION = 0.035       # a box narrower than this share of the axis is not labelled
OTHER = ("(unattributed)", "(outside the model)")
_NUM = re.compile(r"(\d+)")


def natural(path: str):
    """Sort key: layer.2 before layer.10."""
    return [int(p) if p.isdigit() else p for p in _NUM.split(path)]


def tree(rows: pd.DataFrame, depth: int = MAX_DEPTH) -> dict[str, float]:
    """Module path (cut at `depth` parts; "" the model) -> its time per iteration (us),
    its submodules' included; rows outside the model's modules under their own labels."""
    out: dict[str, float] = {}
    for module, t in rows.groupby(rows["module"].fillna(""), sort=False)["time_us"].sum().items():
        module = str(module)
        if module in OTHER:
            out[module] = out.get(module, 0.0) + t
            continue
        parts = module.split(".")[:depth] if module else []
        out[""] = out.get("", 0.0) + t
        for i in range(1, len(parts) + 1):
            key = ".".join(parts[:i])
            out[key] = out.get(key, 0.0) + t
    return out


def layout(times: dict[str, float], order: list[str] | None = None) -> list[tuple[str, int, float, float]]:
    """(path, depth, x0, width) of every box: the model at depth 0 from x = 0, then the
    labels outside the model after it; each module's children left to right in `order`
    (natural path order where not given)."""
    children: dict[str, list[str]] = {}
    for p in times:
        if p and p not in OTHER:
            children.setdefault(p.rsplit(".", 1)[0] if "." in p else "", []).append(p)
    rank = {p: i for i, p in enumerate(order or [])}
    boxes = []

    def place(p: str, depth: int, x: float):
        boxes.append((p, depth, x, times[p]))
        inner = x
        for c in sorted(children.get(p, []), key=lambda c: (rank.get(c, len(rank)), natural(c))):
            place(c, depth + 1, inner)
            inner += times[c]

    x = 0.0
    if "" in times:
        place("", 0, 0.0)
        x = times[""]
    for o in OTHER:
        if o in times:
            boxes.append((o, 0, x, times[o]))
            x += times[o]
    return boxes


def choose(table: pd.DataFrame, model: str) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """(eager rows, variant rows, variant) of one configuration of the model: the first
    repeat, the compiled variant `compile` where run (else the first), the configuration
    with the most eager kernel time."""
    t = table[table["model"] == model]
    if t.empty or not (t["variant"] == "eager").any() or not (t["variant"] != "eager").any():
        raise style.NoData(f"no eager and compiled attribution of {model}")
    variants = sorted(set(t["variant"]) - {"eager"})
    variant = "compile" if "compile" in variants else variants[0]
    keys = [c for c in ("batch", "size", "mode", "dtype", "backend", "device") if c in t]
    t = t[t["repeat"].astype(str) == str(sorted(t["repeat"].astype(str))[0])] if "repeat" in t else t
    eager = t[t["variant"] == "eager"]
    both = set(map(tuple, t[t["variant"] == variant][keys].astype(str).values))
    totals = eager.groupby(keys, dropna=False)["time_us"].sum().sort_values(ascending=False)
    key = next((k for k in totals.index if tuple(map(str, k if isinstance(k, tuple) else (k,)))
                in both), None)
    if key is None:
        raise style.NoData(f"no configuration of {model} with eager and {variant} attributed")
    key = key if isinstance(key, tuple) else (key,)

    def pick(v):
        m = (t["variant"] == v)
        for c, x in zip(keys, key):
            m &= t[c].astype(str) == str(x)
        return t[m]
    return pick("eager"), pick(variant), variant


def _label(path: str) -> str:
    return path.rsplit(".", 1)[-1] if path else "(model)"


def draw_panel(ax, boxes, colours, span: float, unit: tuple[float, str]) -> None:
    scale, name = unit
    for (path, depth, x0, w), c in zip(boxes, colours):
        ax.add_patch(style.plt.Rectangle((x0 * scale, depth), w * scale, 0.92, facecolor=c, edgecolor="white",
                                         linewidth=0.4))
        if w >= LABEL_FRACTION * span:
            ax.text((x0 + w / 2) * scale, depth + 0.46, f"{_label(path)}\n{w * scale:.3g} {name}", ha="center",
                    va="center", fontsize=6, clip_on=True)
    depth = max((b[1] for b in boxes), default=0) + 1
    ax.set_xlim(0, span * scale)
    ax.set_ylim(depth, 0)
    ax.set_yticks([])
    ax.set_xlabel(f"kernel time per iteration ({name})")


def attribution_icicle(t: dict, model: str):
    """The figure (module doc) of one model from tables t (t["attribution"]: the table)."""
    table = t.get("attribution")
    if table is None or len(table) == 0:
        raise style.NoData("no attribution table")
    eager, variant_rows, variant = choose(table, model)
    te, tv = tree(eager), tree(variant_rows)
    order = [p for p, _ in sorted(te.items(), key=lambda kv: natural(kv[0]))]
    be, bv = layout(te, order), layout(tv, order)
    span = max(sum(v for k, v in te.items() if k in ("",) + OTHER), sum(v for k, v in tv.items() if k in ("",) + OTHER))
    unit = (1e-3, "ms") if span >= 1e3 else (1.0, "us")
    tops = sorted({p.split(".")[0] for p, *_ in be if p and p not in OTHER}, key=natural)
    palette = {p: style.PALETTE[i % len(style.PALETTE)] for i, p in enumerate(tops)}
    grey = "#bbbbbb"
    ce = [grey if (not p or p in OTHER) else palette[p.split(".")[0]] for p, *_ in be]
    cmap = style.plt.get_cmap("RdYlGn_r")
    cv = []
    for p, _, _, w in bv:
        e = te.get(p)
        cv.append(grey if not e else cmap(float(np.clip(0.5 + np.log2(max(w, 1e-9) / e) / 4, 0, 1))))
    depth = max(max((b[1] for b in be), default=0), max((b[1] for b in bv), default=0)) + 1
    fig, axes = style.plt.subplots(2, 1, figsize=(11, 1.2 + 0.55 * 2 * depth), sharex=True)
    draw_panel(axes[0], be, ce, span, unit)
    draw_panel(axes[1], bv, cv, span, unit)
    axes[0].set_title(f"{model}: eager, {sum(eager['time_us']) * unit[0]:.3g} {unit[1]} per iteration",
                      fontsize=8, loc="left")
    axes[1].set_title(f"{variant}, {sum(variant_rows['time_us']) * unit[0]:.3g} {unit[1]} per iteration "
                      "(green: less time than eager's module, red: more)", fontsize=8, loc="left")
    axes[0].set_xlabel("")
    fig.tight_layout()
    return fig
