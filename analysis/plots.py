"""Figures from the tidy tables; every figure is labelled with backend and device.

FIGURES maps a figure name to a function (runs, speedups) -> matplotlib Figure. Plots
read only the tidy tables, so they regenerate on any machine from existing results.
"""
from __future__ import annotations

import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402


def _label(df: pd.DataFrame) -> str:
    parts = []
    for col in ("backend", "device", "gpu", "dtype", "mode"):
        if col in df and df[col].notna().any():
            vals = sorted(set(df[col].dropna().astype(str)))
            parts.append(f"{col}={'/'.join(vals)}")
    return ", ".join(parts)


def _grid(n: int):
    fig, axes = plt.subplots(1, max(n, 1), figsize=(4.2 * max(n, 1), 3.6), squeeze=False)
    return fig, axes[0]


def _empty(ax, text):
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, fontsize=9, wrap=True)
    ax.set_xticks([]); ax.set_yticks([])


def speedup_vs_batch(runs: pd.DataFrame, sp: pd.DataFrame):
    models = sorted(sp["model"].unique())
    fig, axes = _grid(len(models))
    for ax, model in zip(axes, models):
        d = sp[(sp["model"] == model) & (sp["variant"] != "eager")].dropna(subset=["speedup_wall"])
        ax.set_title(model)
        if d.empty:
            _empty(ax, "no successful variant runs"); continue
        for variant, g in d.groupby("variant"):
            g = g.sort_values("batch")
            ax.plot(g["batch"], g["speedup_wall"], marker="o", label=variant)
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("batch size"); ax.set_ylabel("speedup over eager (wall time)")
        ax.legend(fontsize=8)
    fig.suptitle(f"Speedup vs batch size ({_label(runs)})", fontsize=9)
    return fig


def kernels_per_iter(runs: pd.DataFrame, sp: pd.DataFrame):
    models = sorted(sp["model"].unique())
    fig, axes = _grid(len(models))
    for ax, model in zip(axes, models):
        d = sp[sp["model"] == model].dropna(subset=["kernels_per_iter"]).pivot_table(
            index="batch", columns="variant", values="kernels_per_iter")
        if d.empty:
            _empty(ax, "no successful runs"); ax.set_title(model); continue
        d.plot.bar(ax=ax, rot=0)
        ax.set_title(model); ax.set_xlabel("batch size"); ax.set_ylabel("kernels per iteration")
        ax.legend(fontsize=8)
    dev = set(runs["device"].dropna())
    what = "CPU kernels (outermost operators)" if dev == {"cpu"} else "GPU kernels"
    fig.suptitle(f"{what} per iteration ({_label(runs)})", fontsize=9)
    return fig


def launch_overhead(runs: pd.DataFrame, sp: pd.DataFrame):
    fig, axes = _grid(1)
    ax = axes[0]
    ok = runs[runs["status"] == "ok"]
    d = ok.groupby(["model", "variant", "batch"])["launch_overhead_ratio"].median().dropna().reset_index()
    if d.empty:
        _empty(ax, "launch-overhead ratio needs CUDA launch calls:\n"
               f"not available for {_label(runs)}")
    for (model, variant), g in d.groupby(["model", "variant"]):
        g = g.sort_values("batch")
        ax.plot(g["batch"], g["launch_overhead_ratio"], marker="o", label=f"{model} / {variant}")
    if not d.empty:
        ax.set_xscale("log", base=2); ax.set_yscale("log")
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        ax.set_xlabel("batch size"); ax.set_ylabel("launch API time / kernel time")
        ax.legend(fontsize=7)
    fig.suptitle(f"Launch-overhead ratio ({_label(runs)})", fontsize=9)
    return fig


FIGURES = {
    "speedup_vs_batch": speedup_vs_batch,
    "kernels_per_iter": kernels_per_iter,
    "launch_overhead": launch_overhead,
}


def render(name: str, runs_csv: str, speedups_csv: str, png: str, svg: str) -> None:
    runs = pd.read_csv(runs_csv)
    sp = pd.read_csv(speedups_csv)
    fig = FIGURES[name](runs, sp)
    fig.tight_layout()
    for path in (png, svg):
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        tmp = path + ".tmp" + os.path.splitext(path)[1]
        fig.savefig(tmp, dpi=120)
        os.replace(tmp, path)
    plt.close(fig)
