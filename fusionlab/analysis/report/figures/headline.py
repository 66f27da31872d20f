"""The headline of each model (tables/headline.csv): absolute time per iteration of eager
and each variant, split into GPU kernel time and exposed host time (untraced wall
time), with the headline speedup and its interval."""
from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from fusionlab.analysis.report import style
from fusionlab.analysis.report.slicing import by_model, by_setting, joined_fixed, main_axis
from fusionlab.analysis.report.style import variant_colour, variant_order
from fusionlab.analysis.report.text import HOST_SKEWED, skewed

# this module's figures (read as data by the package: no import, no matplotlib); `needs`
# names when the figure has something to draw (figures.NEEDS); the drawing function is
# the figure's name
FIGURES = [
    {
        'name': 'headline',
        'scope': 'model',
        'category': '1. Headline',
        'needs': 'any',
        'caption': ('Time per iteration of {model} ({configs} configurations drawn; {variants}), untraced, '
                    'split into {split}, with the speedup over eager (paired where paired) and its interval; '
                    "a black tick on a variant's bar marks the eager time its speedup uses (eager timed "
                    "beside it where paired; eager's own bar is its own processes' time): {best}."),
        'shows': ('time per iteration of eager and each variant (kernel time and exposed host time) with '
                    'the speedup and, as a tick, the eager time it uses'),
    },
]


PART_COLOURS = {"kernel_ms": "#4c72b0", "host_ms": "#dd8452", "kernel_wait_ms": "#55a868", "other_ms": "#9a9a9a"}
MAX_PANELS = 4     # panels in one row
MAX_SETTINGS = 3   # rows of panels: one per setting (mode and dtype), each along the same axis


def part_labels(cpu: bool) -> dict:
    if cpu:
        return {"kernel_ms": "CPU operator time", "host_ms": "time outside operators",
                "kernel_wait_ms": "kernel wait", "other_ms": "other idle"}
    return {"kernel_ms": "GPU kernel time", "host_ms": "exposed host time", "kernel_wait_ms": "kernel wait",
            "other_ms": "other idle (sync)"}


def speedup_label(r, method: bool = True) -> str:
    """'1.10x paired [1.02, 1.20] range of 2', 'inconclusive' where the interval holds 1,
    'host-skewed' where the record is (text.HOST_SKEWED). method=False: the interval's
    bounds without its method's words (a bar's label; the caption names the method)."""
    s = r["speedup"]
    if s != s:
        return ""
    est = "" if r["estimator"] == "paired" else " across processes"
    words = f" {r['interval']}" if method else ""
    iv = f" [{r['speedup_lo']:.2f}, {r['speedup_hi']:.2f}]{words}" if r["speedup_lo"] == r["speedup_lo"] \
        else f" ({r['interval']})" if isinstance(r["interval"], str) and r["interval"] else ""
    tail = ", inconclusive" if r["verdict"] == "inconclusive" else ""
    skew = f", {HOST_SKEWED}" if skewed(r) else ""
    return f"{s:.2f}x{est}{iv}{tail}{skew}"


def host_bound_words(fig, r, keys) -> str:
    """'host-bound, kernel time 1.05x': where the record has host_bound and kernel_speedup
    (eager's kernel time / the variant's), each noted as a mark; '' where it has neither."""
    words = []
    hb = r.get("host_bound")
    if hb is not None and hb == hb and str(hb).lower() in ("true", "1", "1.0"):
        style.record(fig, **keys, mark="label", quantity="host_bound", value=1.0, text="host-bound")
        words.append("host-bound")
    ks = r.get("kernel_speedup")
    if ks is not None and ks == ks:
        words.append("kernel time " + style.noted(fig, "x2f", ks, **keys, mark="label", quantity="kernel_speedup"))
    return ", ".join(words)


def pick(values, n=MAX_PANELS) -> list:
    """At most n of the sorted values: the first, the last, and evenly between."""
    v = sorted(values)
    if len(v) <= n:
        return v
    return [v[int(round(i))] for i in np.linspace(0, len(v) - 1, n)]


def _panels(h):
    """The panels of the headline: (setting, value of the main axis, rows) for each setting
    (by_setting: inference and train apart) and each value along its main axis. In one row
    where they are at most MAX_PANELS; else, where each setting has at most MAX_PANELS
    values of the same axis, a row per setting (at most MAX_SETTINGS; None fills a row
    short of values); else one setting (main_axis) and the values pick() keeps. Returns
    (panels, columns, the rows drawn, axis, fixed)."""
    slices = by_setting(h)
    one_axis = len({axis for _, _, axis, _ in slices}) == 1
    counts = [rows[axis].nunique() for _, rows, axis, _ in slices]
    if one_axis and (sum(counts) <= MAX_PANELS or (len(slices) <= MAX_SETTINGS and max(counts) <= MAX_PANELS)):
        axis, cols = slices[0][2], (sum(counts) if sum(counts) <= MAX_PANELS else max(counts))
        panels = []
        for label, rows, _, _ in slices:
            panels += [(label, v, rows) for v in sorted(rows[axis].unique())]
            panels += [None] * ((-len(panels)) % cols if sum(counts) > MAX_PANELS else 0)
        drawn = pd.concat([rows for _, rows, _, _ in slices])
        return panels, cols, drawn, axis, joined_fixed([f for *_, f in slices])
    d, axis, fixed = main_axis(h)
    values = pick(d[axis].unique())
    left_out = sorted(set(d[axis].unique()) - set(values))
    if left_out:
        fixed += f"; {style.xlabel(axis)} {', '.join(f'{v:g}' for v in left_out)} not drawn: see tables/headline.csv"
    return [("", v, d) for v in values], len(values), d, axis, fixed


def failed_beside(failed, rows, axis, val):
    """The runs that ran and failed (a status, no time) in the configuration of a panel's
    rows (one setting at axis = val)."""
    f = failed[failed[axis] == val] if axis in failed else failed.iloc[:0]
    for c in ("mode", "dtype", "size", "backend", "device"):
        if c in rows and c in f and rows[c].nunique(dropna=False) == 1:
            v = rows[c].iloc[0]
            f = f[f[c].fillna("").astype(str) == ("" if pd.isna(v) else str(v))]
    return f.drop_duplicates("variant").set_index("variant")


def headline(t, model):
    """Per setting (mode and dtype) and value of the main swept axis (_panels: a row of
    panels, or a row per setting), a horizontal stacked bar per
    variant (eager on top): GPU kernel time, exposed host time and other idle time per
    iteration, adding up to the untraced wall time written at the bar's end with the
    speedup over eager; a variant that ran and failed there, or never ran (status not run),
    has its status in place of a bar, in a panel of its own where nothing there has a time."""
    every = by_model(t["headline"], model)
    h = every[every["wall_ms"].notna()]
    if h.empty:
        raise style.NoData("no configuration of this model ran ok")
    failed = (every[every["wall_ms"].isna() & every["status"].fillna("ok").astype(str).ne("ok")]
              if "status" in every else every.iloc[:0])
    # a panel for each setting and value with a time, or a run that failed or never ran there
    shown = failed[failed["status"].ne("unsupported")] if "status" in failed else failed
    panels, cols, d, axis, fixed = _panels(pd.concat([h, shown]))
    variants = variant_order(set(d["variant"]) | set(failed["variant"]))
    cpu = set(t["runs"]["device"].dropna()) == {"cpu"} if "device" in t["runs"] else False
    labels = part_labels(cpu)
    n_rows = -(-len(panels) // cols)
    fig, grid = style.grid_figure(n_rows, cols, figsize=(5.4 * cols, (1.8 + 0.5 * len(variants)) * n_rows))
    for ax, panel in zip(grid.flat, panels):
        if panel is None:
            ax.set_visible(False)   # a setting with fewer values than the row is long
    axs = [ax for ax, panel in zip(grid.flat, panels) if panel is not None]
    texts = {}
    for ax, (setting, val, rows) in zip(axs, [p for p in panels if p is not None]):
        here = rows[rows[axis] == val]
        fail = failed_beside(failed, here, axis, val)
        g = pd.concat([here.set_index("variant"), fail[~fail.index.isin(here["variant"])]]).reindex(variants)
        g = g[g["wall_ms"].notna() | g.index.isin(fail.index)]
        f, unit = style.time_unit(g["wall_ms"])
        y = np.arange(len(g))[::-1]
        left = np.zeros(len(g))
        for part, colour in PART_COLOURS.items():
            v = g[part].fillna(0).to_numpy() * f
            if not v.any():
                continue
            ax.barh(y, v, left=left, color=colour, height=0.62, label=labels[part])
            left += v
        refs = g["eager_wall_ms"].where(g.index != "eager").to_numpy() * f
        top = max(left.max(), np.nanmax(np.append(refs, 0))) or 1.0   # 1: a panel with no time drawn
        for yi, (variant, r), end, ref in zip(y, g.iterrows(), left, refs):
            keys = style.keys_of(r, variant)
            if r["wall_ms"] != r["wall_ms"]:   # ran and failed: no time to draw
                style.record(fig, **keys, mark="label", quantity="status", text=str(r["status"]))
                texts.setdefault(ax, []).append(ax.text(top * 0.02, yi, f"{r['status']}: no time measured",
                                                        va="center", fontsize=6.5, color="#8c1c13"))
                continue
            text = f"{r['wall_ms'] * f:.3g} {unit}"
            style.record(fig, **keys, mark="bar", quantity="wall_ms", value=r["wall_ms"])
            if variant != "eager":
                text += "\n" + speedup_label(r, method=False)
                extra = host_bound_words(fig, r, keys)
                text += f"\n{extra}" if extra else ""
                if ref == ref:   # the eager time this variant's speedup uses: an outline the bar's length is read against
                    ax.barh(yi, ref, height=0.62, fill=False, edgecolor="k", lw=0.8, ls=(0, (3, 2)), zorder=3)
                    ax.plot([ref, ref], [yi - 0.42, yi + 0.42], color="k", lw=1.6, solid_capstyle="butt", zorder=4)
                    style.record(fig, **keys, mark="reference tick", quantity="eager_wall_ms",
                                 value=r["eager_wall_ms"])
                style.record(fig, **keys, mark="label", quantity="speedup", value=r["speedup"],
                             text=speedup_label(r, method=False))
            texts.setdefault(ax, []).append(ax.text(max(end, ref if ref == ref else 0) + top * 0.02, yi, text,
                                                    va="center", fontsize=6.5))
        ax.set_yticks(y)
        ax.set_yticklabels(["eager (own processes)" if v == "eager" else v for v in g.index], fontsize=7.5)
        for tick, v in zip(ax.get_yticklabels(), g.index):
            tick.set_color(variant_colour(v))
        ax.set_xlim(0, top * 1.05)
        ax.set_xlabel(f"time per iteration ({unit}), untraced")
        if g["wall_ms"].isna().all():   # nothing there has a time: its statuses alone, rows spaced as bars
            ax.set_ylim(-0.6, len(g) - 0.4)
            ax.set_xticks([])
            ax.set_xlabel("no time measured")
        ax.set_title(", ".join(filter(None, [setting, f"{style.xlabel(axis)} {val:g}"])), fontsize=8)
    handles = {}
    for ax in axs:
        for hd, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, hd)
    order = [labels[p] for p in PART_COLOURS if labels[p] in handles]
    handles = [handles[k] for k in order]
    if (d.loc[d["wall_ms"].notna(), "variant"] != "eager").any():
        handles.append(Line2D([], [], color="k", lw=1.6, ls="none", marker="|", ms=9))
        order.append("eager time the speedup uses (dashed outline)")
    style.legend_below(fig, handles, order, fontsize=6.5, ncol=min(len(order), 3 if cols == 1 else 5))
    style.title(fig, f"Time per iteration and speedup over eager{style.at(fixed)}", t, model)
    style.fit_text_x(texts)
    return fig
