"""Kernel time by class: where each configuration's kernel time goes, split by kernel class
(core.kernel_class.RECORDS, each in its colour), eager beside each variant."""
from __future__ import annotations

import numpy as np

from fusionlab.analysis.report import style
from fusionlab.analysis.report.slicing import by_model
from fusionlab.analysis.report.style import variant_order
from fusionlab.analysis.sweep import suite
from fusionlab.core import kernel_class

# this module's figures (read as data by the package: no import, no matplotlib); `needs`
# names when the figure has something to draw (figures.NEEDS); the drawing function is
# the figure's name
FIGURES = [
    {
        'name': 'kernel_classes',
        'scope': 'model',
        'category': '3. Kernels and fusion',
        'needs': 'cuda',
        'caption': ('Kernel time per iteration of {model} by what each kernel does (tables/kernel_classes.csv: '
                    'fusionlab/core/kernel_class.py names the rule of each class), eager beside each variant '
                    '(traced, median over repeats).'),
        'shows': ('kernel time per iteration split by kernel class, eager beside each variant'),
    },
]

def kernel_classes(t, model):
    """One horizontal bar per configuration and variant (eager first), split into the
    kernel classes' time per iteration; each bar's total written at its end."""
    k = by_model(t.get("kernels", t["runs"].iloc[:0]), model)
    if k.empty or "time_per_iter_us" not in k:
        raise style.NoData("no kernels recorded")
    c = suite.kernel_classes(k)
    keys = [x for x in ("mode", "dtype", "batch", "size") if x in c]
    wide = c.pivot_table(index=[*keys, "variant"], columns="kernel_class", values="time_per_iter_us",
                         aggfunc="sum", sort=True).fillna(0.0)
    classes = [x for x in kernel_class.CLASSES if x in wide.columns]
    order = []
    for cfg, g in wide.groupby(level=list(range(len(keys))), sort=True):
        for v in variant_order(g.index.get_level_values("variant").unique()):
            order.append((*(cfg if isinstance(cfg, tuple) else (cfg,)), v))
    wide = wide.loc[order, classes]
    scale, unit = style.time_unit((wide.sum(axis=1) / 1e3).tolist())
    fig, (ax,) = style.figure(w=6.4, h=1.2 + 0.32 * len(wide))
    y = np.arange(len(wide))[::-1]
    left = np.zeros(len(wide))
    firsts = k.drop_duplicates(["variant", *keys]).set_index(["variant", *keys])
    for cls in classes:
        ms = wide[cls].to_numpy() / 1e3 * scale
        ax.barh(y, ms, left=left, color=kernel_class.COLOURS[cls], label=cls, height=0.7)
        left += ms
        for (*cfg, v), val in zip(wide.index, wide[cls]):
            if val > 0:   # a class the configuration has (tables/kernel_classes.csv has its row)
                row = {**firsts.loc[(v, *cfg)].to_dict(), **dict(zip(keys, cfg))}
                style.record(fig, mark="bar segment", **style.keys_of(row, v), kernel_class=cls,
                             quantity="kernel_classes.time_per_iter_us", value=float(val))
    for yi, total, (*cfg, v), us in zip(y, left, wide.index, wide.sum(axis=1)):
        row = {**firsts.loc[(v, *cfg)].to_dict(), **dict(zip(keys, cfg))}
        text = style.noted(fig, "us", us, **style.keys_of(row, v), mark="total", agg="sum",
                           quantity="kernel_classes.time_per_iter_us")
        ax.text(total, yi, f" {text}", va="center", fontsize=6.5)
    varies = [i for i, name in enumerate(keys) if len({cfg[i] for cfg in wide.index}) > 1]   # what tells rows apart
    labels = []
    for *cfg, v in wide.index:
        said = [("bs " if keys[i] == "batch" else "") + (f"{cfg[i]:g}" if keys[i] == "batch" else str(cfg[i]))
                for i in varies]
        labels.append(", ".join([v, *said]))
    ax.set_yticks(y)
    ax.set_yticklabels(labels, fontsize=6.5)
    for tick, (*_, v) in zip(ax.get_yticklabels(), wide.index):
        tick.set_color(style.variant_colour(v))
    ax.set_xlabel(f"kernel time per iteration ({unit})")
    ax.margins(x=0.12)
    style.legend_below(fig, ax.get_legend_handles_labels()[0], ncol=3)
    # the batch every row shares (the setting is the footer's, the size the title's)
    held = [f"batch size {wide.index[0][i]:g}" for i, name in enumerate(keys) if i not in varies and name == "batch"]
    style.title(fig, "Kernel time by kernel class" + (f" at {', '.join(held)}" if held else ""), t, model)
    return fig
