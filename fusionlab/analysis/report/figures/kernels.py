"""Kernel figures: kernels per iteration per variant along the main swept axis, and the
duration of each kernel (tables/kernels.csv) at one configuration."""
from __future__ import annotations

import numpy as np

from fusionlab.analysis.report import style
from fusionlab.analysis.report.slicing import by_model, main_axis
from fusionlab.analysis.report.style import variant_colour, variant_order

TOP = 8


def _what(t) -> str:
    return "CPU operators" if set(t["runs"]["device"].dropna()) == {"cpu"} else "GPU kernels"


def kernels_per_iter(t, model):
    """Kernels per iteration (the speedups table's median), one bar per variant, the value
    written on each bar."""
    d, axis, fixed = main_axis(by_model(t["speedups"], model).dropna(subset=["kernels_per_iter"]))
    d = d.pivot_table(index=axis, columns="variant", values="kernels_per_iter")
    if d.empty:
        raise style.NoData("no run counted its kernels")
    d = d[variant_order(d.columns)]
    fig, (ax,) = style.figure(w=max(4.5, 1.5 + 0.5 * d.size), h=3.8)
    width = 0.8 / len(d.columns)
    for j, v in enumerate(d.columns):
        bars = ax.bar(np.arange(len(d)) + (j - (len(d.columns) - 1) / 2) * width, d[v], width,
                      color=variant_colour(v), label=v)
        style.bar_values(ax, bars, d[v].tolist(), "{:g}")
    ax.set_xticks(range(len(d))); ax.set_xticklabels([f"{x:g}" for x in d.index])
    ax.set_xlabel(style.xlabel(axis)); ax.set_ylabel(f"{_what(t)} per iteration")
    ax.margins(y=0.15)
    style.legend(ax, frameon=False)
    style.title(fig, f"{_what(t)} per iteration{style.at(fixed)}", t, model)
    return fig


def kernel_durations(t, model):
    """Each kernel's duration per call at the model's largest configuration of the main
    swept axis (first repeat): a panel per variant, its TOP kernels by time per
    iteration, the calls per iteration written beside each bar."""
    k = by_model(t.get("kernels", t["runs"].iloc[:0]), model)
    k = k[k["time_per_iter_us"].notna() & (k["calls_per_iter"] > 0)] if "time_per_iter_us" in k else k.iloc[:0]
    if k.empty:
        raise style.NoData("no kernels recorded")
    k = k[k["repeat"] == k["repeat"].min()]
    d, axis, fixed = main_axis(k)
    d = d[d[axis] == d[axis].max()]
    variants = variant_order(d["variant"].unique())
    fig, axs = style.figure(len(variants), w=4.4, h=1.2 + 0.3 * TOP)
    for ax, v in zip(axs, variants):
        g = d[d["variant"] == v].sort_values("time_per_iter_us", ascending=False)
        rest = g.iloc[TOP:]
        g = g.head(TOP)
        per_call = (g["time_per_iter_us"] / g["calls_per_iter"]).to_numpy()
        y = np.arange(len(g))[::-1]
        bars = ax.barh(y, per_call, color=variant_colour(v), height=0.6)
        ax.bar_label(bars, labels=[f"{style.fmt_time(p / 1e3)} x {c:g}" for p, c in zip(per_call, g["calls_per_iter"])],
                     fontsize=6, padding=2)
        ax.set_yticks(y)
        ax.set_yticklabels([str(n) if len(str(n)) <= 34 else str(n)[:31] + "..." for n in g["name"]], fontsize=6)
        ax.set_xlim(0, per_call.max() * 1.6)
        ax.set_xlabel("duration per call (us); written: per call x calls per iteration")
        total = d[d["variant"] == v]["time_per_iter_us"].sum()
        more = f"; {len(rest)} more: {style.fmt_time(rest['time_per_iter_us'].sum() / 1e3)}" if len(rest) else ""
        ax.set_title(f"{v}: {len(g) + len(rest)} kernels, {style.fmt_time(total / 1e3)} per iteration{more}",
                     fontsize=7,
                     color=variant_colour(v))
    style.title(fig, f"Duration of each {_what(t)[:-1]} at {style.xlabel(axis)} {d[axis].max():g}"
                f"{style.at(fixed)}", t, model)
    return fig
