"""Host time and idle time against the untraced wall time (tables/headline.csv,
sweep.shares): the exposed host time per iteration per variant along the main swept axis,
and the iteration split into GPU kernel time, exposed host time, kernel wait and other
idle, with the busy share under tracing marked as a diagnostic."""
from __future__ import annotations

import numpy as np
import pandas as pd

from fusionlab.analysis.report import style
from fusionlab.analysis.report.figures.headline import PART_COLOURS, part_labels
from fusionlab.analysis.report.slicing import by_model, by_setting, joined_fixed, main_axis
from fusionlab.analysis.report.style import variant_colour, variant_order


# this module's figures (read as data by the package: no import, no matplotlib); `needs`
# names when the figure has something to draw (figures.NEEDS); the drawing function is
# the figure's name
FIGURES = [
    {
        'name': 'launch_overhead',
        'scope': 'model',
        'category': '2. Where the time goes',
        'needs': 'cuda',
        'caption': ('Exposed host time per iteration of {model} (the GPU waiting on the host), against the '
                    'untraced wall time; at most {host_max} of an iteration. Written at each point (at one '
                    'value of the swept axis, beside each bar): exposed host time per launch call.'),
        'shows': ('exposed host time against the untraced wall time, with host time per launch'),
    },
    {
        'name': 'idle_breakdown',
        'scope': 'model',
        'category': '2. Where the time goes',
        'needs': 'cuda',
        'caption': ('The untraced iteration of {model} split into kernel time, exposed host time, kernel '
                    'wait and other idle, in time per iteration (the share of each large part written in '
                    'it); the black tick is the busy share under tracing (a diagnostic: tracing inflates '
                    'host time). Exposed host time reaches {host_max}.'),
        'shows': ('the untraced wall time split into kernel time, kernel wait and exposed host time'),
    },
]


SETTING_LINES = [("-", "o"), ("--", "s"), (":", "^"), ("-.", "D")]


def _rows(t, model):
    """(rows, axis, fixed) of the model's configurations with a kernel time and a wall
    time: every setting (mode and dtype: by_setting), its label in column _setting ('' for
    one setting), where they share the main axis; else one setting (main_axis)."""
    h = by_model(t["headline"], model)
    h = h[h["wall_ms"].notna() & h["kernel_ms"].notna()]
    if h.empty:
        raise style.NoData("no configuration with a kernel time and an untraced wall time")
    slices = by_setting(h)
    if len({axis for _, _, axis, _ in slices}) > 1:
        d, axis, fixed = main_axis(h)
        return d.assign(_setting=""), axis, fixed
    return (pd.concat([rows.assign(_setting=label) for label, rows, _, _ in slices]), slices[0][2],
            joined_fixed([f for *_, f in slices]))


def launch_overhead(t, model):
    """Exposed host time per iteration (left) and its share of the untraced wall time
    (right) per variant along the main swept axis, the host time per launch call written
    at each point."""
    d, axis, fixed = _rows(t, model)
    if d[axis].nunique() == 1:
        return _launch_bars(t, model, d, axis, fixed)
    fig, (ax, bx) = style.figure(2, w=4.6, h=3.9)
    f, unit = style.time_unit(d["host_ms"])
    labels, points = [], []
    settings = list(dict.fromkeys(d["_setting"]))
    for v in variant_order(d["variant"].unique()):
        for setting, (ls, mk) in zip(settings, SETTING_LINES * len(settings)):
            g = d[(d["variant"] == v) & (d["_setting"] == setting)].sort_values(axis)
            if g.empty:
                continue
            c = variant_colour(v)
            name = ", ".join(filter(None, [v, setting]))
            ax.plot(g[axis], g["host_ms"] * f, marker=mk, ls=ls, color=c, label=name)
            bx.plot(g[axis], 100 * g["host_share"], marker=mk, ls=ls, color=c, label=name)
            for _, r in g.iterrows():
                style.record(fig, **style.keys_of(r), mark="point", quantity="host_ms", value=r["host_ms"])
            xs, ys = g[axis].to_numpy(float), 100 * g["host_share"].to_numpy(float)
            for i in range(len(xs) - 1):      # the line between points, so no label crosses it
                for f_ in np.linspace(0, 1, 24):
                    points.append((xs[i] ** (1 - f_) * xs[i + 1] ** f_, ys[i] + f_ * (ys[i + 1] - ys[i])))
            for _, r in g.iterrows():
                x, y, per = r[axis], 100 * r["host_share"], r["host_per_launch_us"]
                points.append((x, y))
                if per == per:
                    said = style.noted(fig, "us", per, **style.keys_of(r), mark="label", quantity="host_per_launch_us")
                    labels.append((x, y, f"{said}{' us' if per == 0 else ''}/launch", {"fontsize": 5.5, "color": c}))
    for a in (ax, bx):
        style.log_axis(a, "x", base=2)
        style.plain_x_ticks(a, d[axis].unique())
        a.set_xlabel(style.xlabel(axis))
        a.margins(x=0.08)
    ax.set_ylabel(f"exposed host time per iteration ({unit})")
    bx.set_ylabel("exposed host time, % of untraced wall time")
    bx.set_ylim(-3, 105)
    style.legend(ax, frameon=False)
    style.title(fig, f"Exposed host time, untraced{style.at(fixed)}", t, model)
    style.place_labels(bx, labels, markers=points, marker_pt=4.5)
    return fig


def _launch_bars(t, model, d, axis, fixed):
    """launch_overhead at one value of the main axis: a horizontal bar per variant (and
    setting), the exposed host time per iteration (left) and its share of the untraced
    wall time (right), each bar's value and the host time per launch call written beside it."""
    variants = variant_order(d["variant"].unique())
    d = d.assign(_o=d["variant"].map({v: i for i, v in enumerate(variants)}),
                 _s=d["_setting"].map({s: i for i, s in enumerate(dict.fromkeys(d["_setting"]))}))
    d = d.sort_values(["_s", "_o"]).reset_index(drop=True)
    fig, (ax, bx) = style.figure(2, w=4.6, h=1.5 + 0.36 * len(d))
    f, unit = style.time_unit(d["host_ms"])
    y = np.arange(len(d))[::-1]
    colours = [variant_colour(v) for v in d["variant"]]
    rows = [style.keys_of(r) for _, r in d.iterrows()]
    ax.barh(y, f * d["host_ms"].fillna(0), color=colours, height=0.6)
    bx.barh(y, 100 * d["host_share"].fillna(0), color=colours, height=0.6)
    texts = {ax: [], bx: []}
    for yi, (_, r), keys in zip(y, d.iterrows(), rows):
        ms = style.noted(fig, "ms", r["host_ms"], **keys, mark="bar", quantity="host_ms") + (" ms" if r["host_ms"] == 0 else "")
        texts[ax].append(ax.annotate(ms, (f * (r["host_ms"] if r["host_ms"] == r["host_ms"] else 0), yi),
                                     xytext=(3, 0), textcoords="offset points", va="center", fontsize=6.5))
        share = style.noted(fig, "share", r["host_share"], **keys, mark="bar", quantity="host_share")
        per = r["host_per_launch_us"]
        if per == per:
            share += ("; " + style.noted(fig, "us", per, **keys, mark="label", quantity="host_per_launch_us")
                      + (" us" if per == 0 else "") + "/launch")
        texts[bx].append(bx.annotate(share, (100 * (r["host_share"] if r["host_share"] == r["host_share"] else 0), yi),
                                     xytext=(3, 0), textcoords="offset points", va="center", fontsize=6.5))
    names = [", ".join(filter(None, [r["variant"], r["_setting"]])) for _, r in d.iterrows()]
    for a in (ax, bx):
        a.set_yticks(y)
        a.set_yticklabels(names if a is ax else [], fontsize=7)
        a.set_ylim(-0.6, len(d) - 0.4)
    for tick, v in zip(ax.get_yticklabels(), d["variant"]):
        tick.set_color(variant_colour(v))
    ax.set_xlabel(f"exposed host time per iteration ({unit})")
    bx.set_xlabel("exposed host time, % of untraced wall time; per launch call")
    ax.set_xlim(0, max(f * d["host_ms"].max(), 1e-9) * 1.05)
    bx.set_xlim(0, max(100 * d["host_share"].max(), 1.0) * 1.05)
    style.title(fig, f"Exposed host time, untraced, at {style.xlabel(axis)} {d[axis].iloc[0]:g}{style.at(fixed)}",
                t, model)
    style.fit_text_x(texts)
    return fig


def idle_breakdown(t, model):
    """The untraced iteration split (sweep.shares) as a stacked bar per variant and value of
    the main swept axis, in time per iteration (so that a bar's length is its wall time,
    comparable across variants), each part's share of its bar written in it where it
    fits; the GPU busy time under tracing (traced busy share x untraced wall time) as a
    black tick, a diagnostic."""
    d, axis, fixed = _rows(t, model)
    variants = variant_order(d["variant"].unique())
    d = d.assign(_o=d["variant"].map({v: i for i, v in enumerate(variants)}))
    d = d.assign(_s=d["_setting"].map({s: i for i, s in enumerate(dict.fromkeys(d["_setting"]))}))
    d = d.sort_values(["_s", axis, "_o"])
    longest = max(d["_setting"].str.len().max(), d["variant"].str.len().max())   # a tick label's widest line
    per_bar = 0.55 if len(d) > 8 else min(1.4, max(0.55, 0.055 * longest + 0.1))
    fig, (ax,) = style.figure(w=max(5.0, 2.4 + per_bar * len(d)), h=4.4)
    f, unit = style.time_unit(d["wall_ms"])
    x = np.arange(len(d))
    bottom = np.zeros(len(d))
    labels = part_labels(False)
    top = float(d["wall_ms"].max() * f)
    rows = [style.keys_of(r) for _, r in d.iterrows()]
    for part, share in (("kernel_ms", "kernel_share"), ("host_ms", "host_share"),
                        ("kernel_wait_ms", "kernel_wait_share"), ("other_ms", "other_share")):
        v = d[part].fillna(0).to_numpy() * f
        ax.bar(x, v, 0.7, bottom=bottom, color=PART_COLOURS[part], label=labels[part])
        for xi, lo_, p, raw, sh, keys in zip(x, bottom, v, d[part], d[share], rows):
            style.record(fig, **keys, mark="segment", quantity=part, value=raw)
            if part in ("kernel_ms", "host_ms") and p >= 0.08 * top and sh == sh:
                ax.text(xi, lo_ + p / 2, style.noted(fig, "share", sh, **keys, mark="label", quantity=share),
                        ha="center", va="center", fontsize=6, color="white")
        bottom += v
    for xi, b, keys, w in zip(x, bottom, rows, d["wall_ms"]):
        ax.annotate(style.noted(fig, "ms", w, **keys, mark="total", quantity="wall_ms"), (xi, b), xytext=(0, 2),
                    textcoords="offset points", ha="center", va="bottom", fontsize=6)
    traced = d["traced_busy_share"].to_numpy(float) * d["wall_ms"].to_numpy(float) * f
    if np.isfinite(traced).any():
        ax.scatter(x, traced, marker="_", s=260, color="k", zorder=4,
                   label="GPU busy under tracing, as a share of\nthe untraced wall time (diagnostic)")
        for keys, sh in zip(rows, d["traced_busy_share"]):
            style.record(fig, **keys, mark="tick", quantity="traced_busy_share", value=sh)
    ax.set_xticks(x)
    ax.set_xticklabels(["\n".join(filter(None, [r["variant"], r["_setting"].replace(" ", chr(10)),
                                                  f"{'bs' if axis == 'batch' else axis} {r[axis]:g}"]))
                        for _, r in d.iterrows()], fontsize=6.5, rotation=90 if len(d) > 8 else 0)
    for tick, v in zip(ax.get_xticklabels(), d["variant"]):
        tick.set_color(variant_colour(v))
    ax.set_ylabel(f"untraced wall time per iteration ({unit})")
    ax.margins(y=0.1)
    ax.legend(fontsize=6.5, loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0, frameon=False)
    style.title(fig, f"GPU busy and idle per iteration, untraced{style.at(fixed)}", t, model)
    return fig
