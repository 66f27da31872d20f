"""Where a model's kernel time goes, eager against a compiled variant: two icicle charts
(tables/attribution.csv) on one time axis, the model's module tree from the top (the
whole model) down, each module as wide as its kernel time per iteration (its submodules'
included). A module that holds nothing but one submodule in both runs is drawn as one box
with it (`model.encoder.layer`), so that wrappers take no row. Eager's boxes are one colour;
the variant's are coloured by their time against eager's for the same module (green: less,
red: more; grey: a module eager has no time in). A module is labelled where its box is wide
enough for its name; MAX_DEPTH rows are drawn (deeper modules' time stays in their ancestor
there), so that a network of hundreds of modules stays readable. Each panel's total is a
mark the audit checks against the table (the sum of the run's rows)."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd
from matplotlib.collections import PatchCollection

from fusionlab.analysis.report import style
from fusionlab.analysis.sweep import attribution as sweep_attribution

FIGURES = [
    {
        'name': 'attribution_icicle',
        'scope': 'model',
        'category': '2. Where the time goes',
        'needs': 'compared',
        'caption': ('Kernel time per iteration of {model} by nn.Module path, eager (top) against a compiled '
                    'variant (bottom) on one time axis: each box as wide as its module\'s kernel time, its '
                    'submodules\' included; a fused kernel\'s time split among the modules of the ops it '
                    'computes (tables/attribution.csv: the rule of each row); one configuration, the repeat '
                    'with the most time attributed to a module path.'),
        'shows': 'where in the model (which nn.Module) each variant spends its kernel time, eager against the variant',
    },
]

MAX_DEPTH = 6
LABEL_PT = 6
AXIS_PT = 10 * 72            # the panels' width (points) a label must fit in its box's share of
OTHER = (*sweep_attribution.NOT_MODULES,)   # unattributed, outside the model, the training loop's parts
_NUM = re.compile(r"(\d+)")


def natural(path: str):
    """Sort key: layer.2 before layer.10."""
    return [int(p) if p.isdigit() else p for p in _NUM.split(path)]


def tree(rows: pd.DataFrame) -> dict[str, float]:
    """Module path ("" the model) -> its time per iteration (us), its submodules' included;
    rows outside the model's modules under their own labels."""
    out: dict[str, float] = {}
    for module, t in rows.groupby(rows["module"].fillna(""), sort=False)["time_us"].sum().items():
        module = str(module)
        if module in OTHER:
            out[module] = out.get(module, 0.0) + t
            continue
        parts = module.split(".") if module else []
        out[""] = out.get("", 0.0) + t
        for i in range(1, len(parts) + 1):
            key = ".".join(parts[:i])
            out[key] = out.get(key, 0.0) + t
    return out


def _children(times: dict[str, float]) -> dict[str, list[str]]:
    children: dict[str, list[str]] = {}
    for p in times:
        if p and p not in OTHER:
            children.setdefault(p.rsplit(".", 1)[0] if "." in p else "", []).append(p)
    return children


def chains(*trees: dict[str, float]) -> set[str]:
    """The modules drawn as one box with their one submodule: in every tree that has the
    module, that submodule is its only one and holds all its time."""
    kids = [_children(t) for t in trees]
    out = set()
    for p in set().union(*trees) - set(OTHER):
        seen = [(t, tuple(k.get(p, []))) for t, k in zip(trees, kids) if p in t]
        if seen and len({c for _, c in seen}) == 1 and len(seen[0][1]) == 1 and \
                all(t[c[0]] >= t[p] * (1 - 1e-9) for t, c in seen):
            out.add(p)
    return out


def layout(times: dict[str, float], order: list[str] | None = None, merged=frozenset(),
           depth: int = MAX_DEPTH) -> list[tuple[str, int, float, float, str]]:
    """(path, row, x0, width, label) of every box drawn: the model in row 0 from x = 0, then
    the labels outside the model after it; each module's children left to right in `order`
    (natural path order where not given); a module of `merged` (chains()) drawn as its one
    submodule, labelled with both names; rows below `depth` not drawn."""
    children = _children(times)
    rank = {p: i for i, p in enumerate(order or [])}
    boxes = []

    def place(p: str, row: int, x: float, shown: str | None):
        if p in merged:
            place(children[p][0], row, x, shown)
            return
        if row >= depth:
            return
        label = (p or "(model)") if not shown else p[len(shown) + 1:]
        boxes.append((p, row, x, times[p], label))
        inner = x
        for c in sorted(children.get(p, []), key=lambda c: (rank.get(c, len(rank)), natural(c))):
            place(c, row + 1, inner, p)
            inner += times[c]

    x = 0.0
    if "" in times:
        place("", 0, 0.0, None)
        x = times[""]
    for o in OTHER:
        if o in times:
            boxes.append((o, 0, x, times[o], o))
            x += times[o]
    return boxes


def choose(table: pd.DataFrame, model: str) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """(eager rows, variant rows, variant) of one configuration of the model: the repeat
    sweep.attribution.chosen() keeps, the compiled variant `compile` where run (else the
    first), the configuration with the most eager kernel time."""
    t = sweep_attribution.chosen(table[table["model"] == model])
    if t.empty or not (t["variant"] == "eager").any() or not (t["variant"] != "eager").any():
        raise style.NoData(f"no eager and compiled attribution of {model}")
    variants = sorted(set(t["variant"]) - {"eager"})
    variant = "compile" if "compile" in variants else variants[0]
    keys = [c for c in ("batch", "size", "mode", "dtype", "backend", "device") if c in t]
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


EAGER_FILL, GREY = "#9ecae1", "#bbbbbb"
RATIO_SPAN = 2.0       # the colour scale's ends: 2**-2 and 2**2 times eager's module time


def fits(text: str, width: float, span: float) -> bool:
    """A label's longest line fits a box `width` of the axis' `span` (about 0.6 em a character)."""
    return width / span * AXIS_PT >= 0.6 * LABEL_PT * max(map(len, text.split("\n"))) + 3


def draw_panel(ax, boxes, colours, span: float, unit: tuple[float, str]) -> None:
    scale, name = unit
    ax.add_collection(PatchCollection([style.plt.Rectangle((x0 * scale, row), w * scale, 0.92)
                                       for _, row, x0, w, _ in boxes], facecolors=colours, edgecolors="white",
                                      linewidths=0.4))
    for path, row, x0, w, label in boxes:
        text = next((x for x in (f"{label}\n{w * scale:.3g} {name}", label) if fits(x, w, span)), None)
        if text is not None:
            ax.text((x0 + w / 2) * scale, row + 0.46, text, ha="center", va="center", fontsize=LABEL_PT,
                    clip_on=True)
    rows = max((b[1] for b in boxes), default=0) + 1
    ax.set_xlim(0, span * scale)
    ax.set_ylim(rows, 0)
    ax.set_yticks([])
    ax.set_xlabel(f"kernel time per iteration ({name})")


def _keys(rows: pd.DataFrame) -> dict:
    r = rows.iloc[0]
    keys = style.keys_of(r)
    keys["repeat"] = r["repeat"].item() if hasattr(r["repeat"], "item") else r["repeat"]
    return keys


def _drawn(rows: pd.DataFrame) -> str:
    """The configuration a panel draws: batch, size label (where the table has them), repeat."""
    r, keys = rows.iloc[0], _keys(rows)
    parts = [f"batch {r['batch']}" if "batch" in rows else "", f"size {r['size']}" if "size" in rows else ""]
    return ", ".join([p for p in parts if p] + [f"repeat {keys['repeat']}"])


def attribution_icicle(t: dict, model: str):
    """The figure (module doc) of one model from tables t (t["attribution"]: the table)."""
    table = t.get("attribution")
    if table is None or len(table) == 0:
        raise style.NoData("no attribution table")
    eager, variant_rows, variant = choose(table, model)
    te, tv = tree(eager), tree(variant_rows)
    order = sorted(te, key=natural)
    merged = chains(te, tv)
    be, bv = layout(te, order, merged), layout(tv, order, merged)
    span = max(sum(v for k, v in te.items() if k in ("",) + OTHER), sum(v for k, v in tv.items() if k in ("",) + OTHER))
    unit = (1e-3, "ms") if span >= 1e3 else (1.0, "us")
    ce = [GREY if p in OTHER else EAGER_FILL for p, *_ in be]
    cmap = style.plt.get_cmap("RdYlGn_r")
    norm = style.plt.Normalize(-RATIO_SPAN, RATIO_SPAN)
    cv = []
    for p, _, _, w, _ in bv:
        e = te.get(p)
        cv.append(GREY if (not e or p in OTHER) else cmap(norm(float(np.log2(max(w, 1e-9) / e)))))
    rows = max(max((b[1] for b in be), default=0), max((b[1] for b in bv), default=0)) + 1
    fig, axes = style.plt.subplots(2, 1, figsize=(11, max(3.6, 1.6 + 0.5 * 2 * rows)), sharex=True, layout="constrained")
    draw_panel(axes[0], be, ce, span, unit)
    draw_panel(axes[1], bv, cv, span, unit)
    total_e = style.noted(fig, "us", float(eager["time_us"].sum()), **_keys(eager), mark="title",
                          quantity="attribution.time_us", agg="sum")
    total_v = style.noted(fig, "us", float(variant_rows["time_us"].sum()), **_keys(variant_rows), mark="title",
                          quantity="attribution.time_us", agg="sum")
    axes[0].set_title(f"eager: {total_e} kernel time per iteration ({_drawn(eager)})", fontsize=8, loc="left")
    axes[1].set_title(f"{variant}: {total_v} kernel time per iteration ({_drawn(variant_rows)})",
                      fontsize=8, loc="left")
    axes[0].set_xlabel("")
    bar = fig.colorbar(style.plt.cm.ScalarMappable(norm=norm, cmap=cmap), ax=axes[1], pad=0.01,
                       fraction=0.025, ticks=[-2, -1, 0, 1, 2])
    bar.ax.set_yticklabels(["1/4", "1/2", "1", "2", "4"], fontsize=6)
    bar.set_label(f"{variant} / eager time of the module", fontsize=6.5)
    style.title(fig, f"where the kernel time goes by module, eager against {variant}", t, model)
    return fig
