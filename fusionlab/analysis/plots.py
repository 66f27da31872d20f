"""Figures from the tidy tables; every figure is labelled with backend and device.

FIGURES maps a figure name to (function, scope, category): scope "model" draws one
figure per model (function(tables, model)), scope "sweep" one for the whole sweep
(function(tables, None)). Plots read only the tidy tables (analysis.tables), so they
regenerate on any machine from existing results, and a new sweep axis needs no new code.
"""
from __future__ import annotations

import json
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from fusionlab.analysis import figures  # noqa: E402
from fusionlab.core.io import atomic_path  # noqa: E402

SWEEP = "all"


def _label(df: pd.DataFrame) -> str:
    parts = []
    for col in ("backend", "device", "gpu", "dtype", "mode"):
        if col in df and df[col].notna().any():
            vals = sorted(set(df[col].dropna().astype(str)))
            parts.append(f"{col}={'/'.join(vals)}")
    return ", ".join(parts)


def _fig(n: int = 1, w: float = 5.0):
    fig, axes = plt.subplots(1, n, figsize=(w * n, 3.8), squeeze=False)
    return fig, axes[0]


def _empty(ax, text):
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, fontsize=9, wrap=True)
    ax.set_xticks([]); ax.set_yticks([])


def _title(fig, what, t, model=None):
    fig.suptitle(f"{what}{' - ' + model if model else ''}\n{_label(t['runs'])}", fontsize=8)


def _m(df, model):
    return df[df["model"] == model] if model else df


def _ok(t, model):
    r = _m(t["runs"], model)
    return r[r["status"] == "ok"]


def speedup_vs_batch(t, model):
    fig, (ax,) = _fig()
    d = _m(t["speedups"], model)
    d = d[d["variant"] != "eager"].dropna(subset=["speedup_wall"])
    if d.empty:
        _empty(ax, "no successful variant runs")
    for variant, g in d.groupby("variant"):
        g = g.sort_values("batch")
        lo = (g["speedup_wall"] - g["speedup_wall_lo"]).clip(lower=0).fillna(0)
        hi = (g["speedup_wall_hi"] - g["speedup_wall"]).clip(lower=0).fillna(0)
        line = ax.errorbar(g["batch"], g["speedup_wall"], yerr=[lo, hi], marker="o", capsize=3, label=variant)
        noisy = g[g["noisy"].astype(bool)]
        ax.scatter(noisy["batch"], noisy["speedup_wall"], s=120, facecolors="none",
                   edgecolors=line[0].get_color(), label=f"{variant} (noisy)" if len(noisy) else None)
    if not d.empty:
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        ax.set_xscale("log", base=2); ax.set_yscale("log")
        ax.set_xlabel("batch size"); ax.set_ylabel("speedup over eager (wall time)")
        ax.legend(fontsize=7)
    _title(fig, "Speedup vs batch size, median and 95% CI", t, model)
    return fig


def kernels_per_iter(t, model):
    fig, (ax,) = _fig()
    d = _m(t["speedups"], model).dropna(subset=["kernels_per_iter"]).pivot_table(
        index="batch", columns="variant", values="kernels_per_iter")
    if d.empty:
        _empty(ax, "no successful runs")
    else:
        d.plot.bar(ax=ax, rot=0)
        ax.set_xlabel("batch size"); ax.set_ylabel("kernels per iteration"); ax.legend(fontsize=7)
    what = "CPU kernels (outermost operators)" if set(t["runs"]["device"].dropna()) == {"cpu"} else "GPU kernels"
    _title(fig, f"{what} per iteration", t, model)
    return fig


def _by_variant_batch(ax, d, col, ylabel, log=True):
    for variant, g in d.groupby("variant"):
        g = g.groupby("batch")[col].median().dropna()
        ax.plot(g.index, g.values, marker="o", label=variant)
    ax.set_xscale("log", base=2)
    if log:
        ax.set_yscale("log")
    ax.set_xlabel("batch size"); ax.set_ylabel(ylabel); ax.legend(fontsize=7)


def launch_overhead(t, model):
    fig, (ax,) = _fig()
    d = _ok(t, model).dropna(subset=["launch_overhead_ratio"])
    if d.empty:
        _empty(ax, f"launch-overhead ratio needs CUDA launch calls:\nnot available for {_label(t['runs'])}")
    else:
        _by_variant_batch(ax, d, "launch_overhead_ratio", "launch API time / kernel time")
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    _title(fig, "Launch-overhead ratio", t, model)
    return fig


def idle_breakdown(t, model):
    fig, (ax,) = _fig(w=6.0)
    cols = ["gpu_busy_fraction", "idle_host_wait_frac", "idle_kernel_wait_frac", "idle_other_frac"]
    d = _ok(t, model).dropna(subset=["gpu_busy_fraction"])
    if d.empty:
        _empty(ax, f"GPU idle breakdown needs GPU kernels:\nnot available for {_label(t['runs'])}")
    else:
        g = d.groupby(["batch", "variant"])[cols].median()
        g.index = [f"{b}\n{v}" for b, v in g.index]
        g.columns = ["busy", "host wait", "kernel wait", "other"]
        g.plot.bar(ax=ax, stacked=True, rot=0, color=["#4c72b0", "#dd8452", "#55a868", "#8c8c8c"])
        ax.set_ylabel("share of the measured range"); ax.set_ylim(0, 1.02); ax.legend(fontsize=7)
        ax.tick_params(axis="x", labelsize=7)
    _title(fig, "GPU time: busy and idle (HTA breakdown)", t, model)
    return fig


def kernel_durations(t, model):
    fig, (ax,) = _fig()
    d = _ok(t, model).dropna(subset=["median_kernel_us"])
    if d.empty:
        _empty(ax, "no kernels")
    else:
        for i, (variant, g) in enumerate(d.groupby("variant")):
            g = g.groupby("batch")[["p10_kernel_us", "median_kernel_us", "p90_kernel_us"]].median()
            x = g.index * (1.08 ** i)
            ax.errorbar(x, g["median_kernel_us"], yerr=[g["median_kernel_us"] - g["p10_kernel_us"],
                                                        g["p90_kernel_us"] - g["median_kernel_us"]],
                        marker="o", capsize=3, ls="none", label=variant)
        ax.set_xscale("log", base=2); ax.set_yscale("log")
        ax.set_xlabel("batch size"); ax.set_ylabel("kernel duration (us): p10, median, p90")
        ax.legend(fontsize=7)
    _title(fig, "Kernel-duration distribution", t, model)
    return fig


def roofline(t, model):
    fig, (ax, bx) = _fig(2)
    d = _ok(t, model)
    peaks = t.get("peaks") or {}
    bw, fl = peaks.get("copy_bandwidth_Bps"), peaks.get("matmul_flops")
    r = d.dropna(subset=["arithmetic_intensity", "achieved_flops"])
    if r.empty:
        _empty(ax, "no run with a FLOP count (matmul/conv)")
    else:
        for (m, v), g in r.groupby(["model", "variant"]):
            ax.scatter(g["arithmetic_intensity"], g["achieved_flops"] / 1e12, label=f"{m} / {v}", s=18)
        if bw and fl:
            x = np.logspace(np.log10(r["arithmetic_intensity"].min() / 4), np.log10(r["arithmetic_intensity"].max() * 4), 100)
            ax.plot(x, np.minimum(bw * x, fl) / 1e12, color="k", lw=1,
                    label=f"copy BW {bw / 1e12:.2f} TB/s, matmul {fl / 1e12:.1f} TFLOP/s")
        ax.set_xscale("log"); ax.set_yscale("log")
        ax.set_xlabel("FLOP per byte (ideal fused traffic)"); ax.set_ylabel("achieved TFLOP/s"); ax.legend(fontsize=6)
    b = d.dropna(subset=["copy_bandwidth_frac"])
    if b.empty:
        _empty(bx, "no measured copy bandwidth or GPU time")
    else:
        g = b.groupby(["model", "variant", "batch"])["copy_bandwidth_frac"].median().unstack("variant")
        g.index = [f"{m}\n{bs}" for m, bs in g.index]
        g.plot.bar(ax=bx, rot=90)
        bx.axhline(1.0, color="grey", lw=0.8, ls="--")
        bx.set_ylabel("ideal bytes / time over copy bandwidth"); bx.tick_params(axis="x", labelsize=6)
        bx.legend(fontsize=7)
    _title(fig, "Roofline and achieved fraction of copy bandwidth", t, model)
    return fig


def crossover(t, model):
    fig, (ax,) = _fig(w=6.0)
    c = t["crossover"]
    if c.empty:
        _empty(ax, "no variant besides eager")
    else:
        labels = [f"{m}\n{v}" for m, v in zip(c["model"], c["variant"])]
        y = c["crossover_batch"]
        ax.bar(range(len(c)), y.fillna(0), color=["#4c72b0" if v == v else "#cccccc" for v in y])
        for i, (v, note) in enumerate(zip(y, c["note"])):
            ax.text(i, (v if v == v else 1), "never" if v != v else f"{v:.0f}", ha="center", va="bottom", fontsize=7)
        ax.set_xticks(range(len(c))); ax.set_xticklabels(labels, fontsize=7)
        ax.set_yscale("log", base=2); ax.set_ylabel("batch where the variant starts to beat eager")
    _title(fig, "Crossover batch size", t, model)
    return fig


def compile_cost(t, model):
    fig, (ax, bx) = _fig(2)
    s = t["speedups"]
    s = s[s["variant"] != "eager"]
    d = s.groupby(["model", "variant"])[["compilation_latency_s", "compression_ratio"]].median()
    if d.dropna(how="all").empty:
        _empty(ax, "no compiled variant ran"); _empty(bx, "")
    else:
        d.index = [f"{m}\n{v}" for m, v in d.index]
        d["compilation_latency_s"].plot.bar(ax=ax, rot=0, color="#dd8452")
        ax.set_ylabel("compilation latency (s)"); ax.tick_params(axis="x", labelsize=7)
        d["compression_ratio"].plot.bar(ax=bx, rot=0, color="#55a868")
        bx.axhline(1.0, color="grey", lw=0.8, ls="--")
        bx.set_ylabel("eager peak memory / variant peak memory"); bx.tick_params(axis="x", labelsize=7)
    _title(fig, "Compile cost (Inductor harness definitions)", t, model)
    return fig


# name: (function, scope, report category); names, scopes and categories from analysis.figures
FIGURES = {name: (globals()[name], scope, category) for name, (scope, category) in figures.FIGURES.items()}


def load_tables(runs_csv, speedups_csv, crossover_csv=None, peaks_json=None) -> dict:
    t = {"runs": pd.read_csv(runs_csv), "speedups": pd.read_csv(speedups_csv)}
    t["crossover"] = pd.read_csv(crossover_csv) if crossover_csv and os.path.exists(crossover_csv) \
        else pd.DataFrame(columns=["model", "variant", "crossover_batch", "note"])
    t["peaks"] = {}
    if peaks_json and os.path.exists(peaks_json):
        with open(peaks_json) as f:
            t["peaks"] = json.load(f)
    return t


def save(fig, png: str, svg: str | None = None) -> None:
    fig.tight_layout()
    for path in filter(None, (png, svg)):
        with atomic_path(path) as tmp:
            fig.savefig(tmp, dpi=110)
    plt.close(fig)


def render(name: str, tables: dict, outputs: dict) -> None:
    """outputs: scope (a model name or SWEEP) -> (png, svg)."""
    fn, scope, _ = FIGURES[name]
    for key, (png, svg) in outputs.items():
        save(fn(tables, None if key == SWEEP else key), png, svg)
