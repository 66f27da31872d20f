"""Kernel figures: kernels per iteration per variant along the main swept axis, and the
duration of each kernel (tables/kernels.csv) at one configuration."""
from __future__ import annotations

import re
import textwrap

import numpy as np
import pandas as pd

from fusionlab.analysis.report import style
from fusionlab.analysis.report.slicing import by_model, by_setting, joined_fixed, main_axis
from fusionlab.analysis.report.style import variant_colour, variant_order

# this module's figures (read as data by the package: no import, no matplotlib); `needs`
# names when the figure has something to draw (figures.NEEDS); the drawing function is
# the figure's name
FIGURES = [
    {
        'name': 'kernels_per_iter',
        'scope': 'model',
        'category': '3. Kernels and fusion',
        'needs': 'any',
        'caption': ('Kernels per iteration of {model} per variant (medians over repeats): {kernels}.'),
        'shows': ('kernels launched per iteration, eager against each variant'),
    },
    {
        'name': 'kernel_durations',
        'scope': 'model',
        'category': '3. Kernels and fusion',
        'needs': 'any',
        'caption': ('Each kernel of {model} at its largest swept configuration: duration per call, calls per '
                    'iteration written beside it (first repeat). Kernels per iteration: {kernels}.'),
        'shows': ('the distribution of kernel durations: fusion makes fewer, longer kernels'),
    },
]


TOP = 8
NAME_CHARS = 30
# a reduction's operator in a demangled ATen kernel name: ReduceOp<float, MaxOps<float>...> -> max
_REDUCE_OP = re.compile(r"(?:native::|<)(\w+?)(?:Ops<|_functor<)")


def short_name(name) -> str:
    """A kernel's name short enough for a label: a Triton kernel's family
    (triton_poi_fused), a long library kernel's first three words (sm80_xmma_gemm...),
    other names as they are up to NAME_CHARS."""
    n = str(name)
    m = re.match(r"(triton_[a-z]+_fused)_", n)
    if m:
        return m.group(1)
    if len(n) <= NAME_CHARS:
        return n
    return "_".join(n.split("_")[:3]) + "..."


def computes(row) -> str:
    """What a kernel computes, from the fusion map's ops column of tables/kernels.csv
    (a reduction's operator read from its full name where ops says only 'reduction');
    '' where unknown."""
    ops = row.get("ops")
    ops = ops if isinstance(ops, str) and ops else ""
    if ops in ("", "reduction") and isinstance(row.get("full_name"), str):
        m = _REDUCE_OP.search(row["full_name"])
        if m:
            ops = f"{m.group(1).lower()} ({ops})" if ops else m.group(1).lower()
    if len(ops) <= NAME_CHARS:
        return ops
    lines = textwrap.wrap(ops.replace("+", "+ "), NAME_CHARS)
    return "\n".join(x.replace("+ ", "+") for x in lines[:2]) + ("..." if len(lines) > 2 else "")


def count(n, what) -> str:
    """'1 launch', '35 launches'."""
    plural = what + ("es" if what.endswith("h") else "s")
    return f"{n:g} {what if n == 1 else plural}"


def kernel_label(row) -> str:
    """Two lines: what the kernel computes, then its short name."""
    what = computes(row)
    return f"{what}\n{short_name(row['name'])}" if what else short_name(row["name"])


def _what(t) -> str:
    return "CPU operators" if set(t["runs"]["device"].dropna()) == {"cpu"} else "GPU kernels"


def kernels_per_iter(t, model):
    """Kernels per iteration (the speedups table's median), one bar per variant at each
    value of the main swept axis and each setting (mode and dtype: by_setting), the value
    written on each bar."""
    s = by_model(t["speedups"], model).dropna(subset=["kernels_per_iter"])
    if s.empty:
        raise style.NoData("no run counted its kernels")
    slices = by_setting(s)
    if len({axis for _, _, axis, _ in slices}) > 1:
        slices = [("", *main_axis(s))]
    axis, fixed = slices[0][2], joined_fixed([f for *_, f in slices])
    d = pd.concat([rows.assign(_setting=label) for label, rows, _, _ in slices])
    d = d.pivot_table(index=["_setting", axis], columns="variant", values="kernels_per_iter", sort=False)
    if d.empty:
        raise style.NoData("no run counted its kernels")
    d = d[variant_order(d.columns)]
    fig, (ax,) = style.figure(w=max(4.5, 1.5 + 0.5 * d.size), h=3.8)
    width = 0.8 / len(d.columns)
    for j, v in enumerate(d.columns):
        bars = ax.bar(np.arange(len(d)) + (j - (len(d.columns) - 1) / 2) * width, d[v], width,
                      color=variant_colour(v), label=v)
        style.bar_values(ax, bars, d[v].tolist(), "{:g}")
    one = d.index.get_level_values(1).nunique() == 1 and len(slices) > 1
    ax.set_xticks(range(len(d)))
    ax.set_xticklabels([setting if one else "\n".join(filter(None, [setting, f"{x:g}"])) for setting, x in d.index])
    ax.set_xlabel(f"{'setting' if len(slices) > 1 else ''}{' at ' if one else ', ' if len(slices) > 1 else ''}"
                  f"{style.xlabel(axis)}{' ' + format(d.index[0][1], 'g') if one else ''}")
    ax.set_ylabel(f"{_what(t)} per iteration")
    ax.margins(y=0.15)
    style.legend(ax, frameon=False)
    style.title(fig, f"{_what(t)} per iteration{style.at(fixed)}", t, model)
    return fig


def ran(t: dict, model: str, variant: str, d: pd.DataFrame) -> bool:
    """Whether the sweep has runs of the variant in the setting (mode, dtype) of kernels d:
    an empty panel then lacks kernels, else the variant was not swept there."""
    r = by_model(t["runs"], model)
    r = r[r["variant"] == variant]
    for col in ("mode", "dtype"):
        if col in r and col in d and d[col].nunique() == 1:
            r = r[r[col] == d[col].iloc[0]]
    return not r.empty


def kernel_durations(t, model):
    """Each kernel's duration per call at the model's largest configuration of the main
    swept axis (first repeat): a panel per variant (a row of panels per setting, mode and
    dtype: by_setting), its TOP kernels by time per iteration (the most on top), each
    labelled with what it computes and its short name, the bar its duration per call, the
    calls and the time per iteration written beside it; the panel's title counts distinct kernels and their launches per iteration."""
    k = by_model(t.get("kernels", t["runs"].iloc[:0]), model)
    k = k[k["time_per_iter_us"].notna() & (k["calls_per_iter"] > 0)] if "time_per_iter_us" in k else k.iloc[:0]
    if k.empty:
        raise style.NoData("no kernels recorded")
    k = k[k["repeat"] == k["repeat"].min()]
    slices = by_setting(k)
    if len({axis for _, _, axis, _ in slices}) > 1:
        rows_, axis, fixed = main_axis(k)
        slices = [("", rows_, axis, fixed)]
    axis = slices[0][2]
    fixed = joined_fixed([f for *_, f in slices])
    slices = [(label, d[d[axis] == d[axis].max()]) for label, d, _, _ in slices]
    variants = variant_order(set().union(*[set(d["variant"]) for _, d in slices]))
    if not variants:
        raise style.NoData("no kernels recorded at the largest configuration")
    rows = max(min(TOP, (d["variant"] == v).sum()) for _, d in slices for v in variants)
    tops = {d[axis].max() for _, d in slices}
    fig, grid = style.grid_figure(len(slices), len(variants),
                                  figsize=(5.4 * len(variants), (1.5 + 0.36 * rows) * len(slices)))
    texts = {}
    for panels, (setting, d) in zip(grid, slices):
        for ax, v in zip(panels, variants):
            g = d[d["variant"] == v].sort_values("time_per_iter_us", ascending=False)
            if g.empty:
                style.empty(ax, f"{v}: {'no kernels recorded' if ran(t, model, v, d) else 'not swept here'}")
                continue
            rest = g.iloc[TOP:]
            g = g.head(TOP)
            per_call = (g["time_per_iter_us"] / g["calls_per_iter"]).to_numpy()
            y = rows - 1 - np.arange(len(g))      # the longest on top, every panel's bars the same height
            bars = ax.barh(y, per_call, color=variant_colour(v), height=0.6)
            texts[ax] = ax.bar_label(bars, labels=[
                f"{style.fmt_time(p / 1e3)} x {c:g}" + (f" = {style.fmt_time(it / 1e3)}" if c != 1 else "")
                for p, c, it in zip(per_call, g["calls_per_iter"], g["time_per_iter_us"])], fontsize=6, padding=2)
            ax.set_yticks(y)
            ax.set_yticklabels([kernel_label(r) for _, r in g.iterrows()], fontsize=6)
            ax.set_ylim(-0.6, rows - 0.4)
            ax.set_xlim(0, per_call.max() * 1.05)
            ax.set_xlabel("duration per call (us); beside: x calls = per iteration", fontsize=7)
            every = d[d["variant"] == v]
            total = every["time_per_iter_us"].sum()
            more = (f"\n{len(rest)} more not shown: {style.fmt_time(rest['time_per_iter_us'].sum() / 1e3)}"
                    " per iteration") if len(rest) else ""
            at = f", {style.xlabel(axis)} {every[axis].max():g}" if len(tops) > 1 else ""
            ax.set_title(f"{v}{' (' + setting + at + ')' if setting else ''}: {style.fmt_time(total / 1e3)} per "
                         f"iteration\n{count(len(every), 'distinct kernel')}, "
                         f"{count(every['calls_per_iter'].sum(), 'launch')} per iteration{more}", fontsize=7,
                         color=variant_colour(v))
    where = f"at {style.xlabel(axis)} {max(tops):g}" if len(tops) == 1 else f"at each setting's largest {style.xlabel(axis)}"
    style.title(fig, f"Duration of each {_what(t)[:-1]} {where}{style.at(fixed)}", t, model)
    style.fit_text_x(texts)
    return fig
