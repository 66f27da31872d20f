"""Figures from the tidy tables; every figure is labelled with backend and device.

FIGURES maps a figure name to (function, scope, category): scope "model" draws one
figure per model (function(tables, model)), scope "sweep" one for the whole sweep
(function(tables, None)). Plots read only the tidy tables (analysis.tables), so they
regenerate on any machine from existing results, and a new sweep axis needs no new code.
Every figure draws a variant in its own colour (figures.variant_colour), titles wrap to
the figure's width, and log axes carry plain numbers (0.5, 1, 2, 5), never 5x10^-1.
"""
from __future__ import annotations

import json
import os
import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter  # noqa: E402

from fusionlab.analysis.sweep import decompose, overfusion, registry_data, tables
from fusionlab.analysis.report import figures  # noqa: E402
from fusionlab.analysis.sweep import scaling as scaling_law  # noqa: E402  (plots.scaling draws it)
from fusionlab.analysis.report.figures import variant_colour  # noqa: E402
from fusionlab.core.io import atomic_path  # noqa: E402

SWEEP = "all"
PART_COLOURS = {"host": "#4c72b0", "traffic": "#55a868", "kernels": "#c44e52", "remainder": "#b0b0b0"}


def _label(df: pd.DataFrame) -> str:
    parts = []
    for col in ("backend", "device", "gpu", "dtype", "mode"):
        if col in df and df[col].notna().any():
            vals = sorted(set(df[col].dropna().astype(str)))
            parts.append(f"{col}={'/'.join(vals)}")
    return ", ".join(parts)


def _fig(n: int = 1, w: float = 5.5, h: float = 4.2):
    fig, axes = plt.subplots(1, n, figsize=(w * n, h), squeeze=False, layout="constrained")
    return fig, axes[0]


def _empty(ax, text):
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, fontsize=9, wrap=True)
    ax.set_xticks([]); ax.set_yticks([])


def _title(fig, what, t, model=None):
    """Title (bold) and the setup line, each wrapped to the figure's width."""
    width = fig.get_figwidth()
    chars = int(width * 72 / (9 * 0.62))
    head = textwrap.fill(f"{model + ': ' if model else ''}{what}", chars)
    sub = textwrap.fill(_label(t["runs"]), chars)
    fig.suptitle(f"{head}\n{sub}" if sub else head, fontsize=9)


def _plain(v, _pos=None) -> str:
    if v <= 0:
        return "0"
    if v >= 1e4 or v < 1e-3:
        return f"{v:.0e}".replace("e+0", "e").replace("e-0", "e-")
    return f"{v:g}"


def _log(ax, axis="y", base=10):
    """A log axis with plain number labels at 1, 2, 5 x 10^k (base 10) or powers of 2."""
    a = ax.yaxis if axis == "y" else ax.xaxis
    (ax.set_yscale if axis == "y" else ax.set_xscale)("log", base=base)
    if base == 2:
        a.set_major_locator(LogLocator(base=2))
    else:
        a.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    a.set_major_formatter(FuncFormatter(_plain))
    a.set_minor_formatter(NullFormatter())


def _fit_log_ticks(ax, axis="y"):
    """Once the data are drawn: enough plain-number ticks for the axis's span (1 to 9 x
    10^k within a decade, 1, 2, 5 x 10^k over a few, 10^k beyond)."""
    a = ax.yaxis if axis == "y" else ax.xaxis
    lo, hi = (ax.get_ylim() if axis == "y" else ax.get_xlim())
    if lo <= 0 or hi <= 0:
        return
    span = np.log10(hi / lo)
    if span < 0.5:   # under a factor of 3: evenly spaced plain numbers (0.6, 0.8, 1, 1.2)
        a.set_major_locator(MaxNLocator(nbins=6, steps=[1, 2, 2.5, 5, 10]))
        a.set_major_formatter(FuncFormatter(_plain))
        a.set_minor_formatter(NullFormatter())
        return
    subs = (1.0, 2.0, 3.0, 5.0) if span < 1.5 \
        else (1.0, 2.0, 5.0) if span < 4 else (1.0,)
    a.set_major_locator(LogLocator(base=10, subs=subs))
    a.set_major_formatter(FuncFormatter(_plain))
    a.set_minor_formatter(NullFormatter())


def _m(df, model):
    return df[df["model"] == model] if model else df


def _slice(d):
    """(rows, axis, fixed) for a per-model plot along one axis: the swept axis with the
    most values (batch on ties, and when only batch is swept), and the rows at the most
    common values of the other swept axes, labelled by fixed ("dim=1024", "" if none).
    A size every row has at a value other than the model's default (the run's size label
    names it: "dim1024") is in fixed too."""
    axes = [a for a in ["batch"] + tables.size_axes(d) if a in d and d[a].nunique() > 1]
    label = d["size"].astype(str) if "size" in d else pd.Series("default", index=d.index)
    held = {a: d[a].iloc[0] for a in tables.size_axes(d) if a not in axes and d[a].nunique() == 1
            and d[a].notna().all() and label.str.contains(rf"(?:^|-){a}\d").all()}
    if not axes:
        return d, "batch", tables.fixed_label(held)
    axis = max(axes, key=lambda a: (d[a].nunique(), a == "batch"))
    others = [a for a in axes if a != axis]
    if not others:
        return d, axis, tables.fixed_label(held)
    best = d.groupby(others).size().idxmax()
    best = best if isinstance(best, tuple) else (best,)
    mask = np.logical_and.reduce([d[a] == v for a, v in zip(others, best)])
    return d[mask], axis, tables.fixed_label({**dict(zip(others, best)), **held})


def _xlabel(axis):
    return "batch size" if axis == "batch" else axis


def _at(fixed):
    return f" at {fixed}" if fixed else ""


def _ok(t, model):
    r = _m(t["runs"], model)
    return r[r["status"] == "ok"]


def _legend(ax, **kw):
    h, lab = ax.get_legend_handles_labels()
    if h:
        ax.legend(**{"fontsize": 7, **kw})


def speedup_vs_batch(t, model):
    """Every variant of the model on one plot: speedup vs batch with 95% CIs (lines), or,
    where the model ran at one batch size, the variants side by side."""
    d = _m(t["speedups"], model)
    d = d[(d["variant"] != "eager") & tables.paired_first(d).notna()]
    d, axis, fixed = _slice(d)
    if d[axis].nunique() <= 1:
        return _speedup_side_by_side(t, model, d)
    fig, (ax,) = _fig()
    for variant, g in d.groupby("variant"):
        g = g.sort_values(axis)
        c = variant_colour(variant)
        lo = (g["speedup_wall"] - g["speedup_wall_lo"]).clip(lower=0).fillna(0)
        hi = (g["speedup_wall_hi"] - g["speedup_wall"]).clip(lower=0).fillna(0)
        paired = g.dropna(subset=["speedup_paired"]) if "speedup_paired" in g else g.iloc[:0]
        ax.errorbar(g[axis], g["speedup_wall"], yerr=[lo, hi], marker="o", capsize=3, color=c,
                    label=f"{variant}: across processes" if len(paired) else variant)
        noisy = g[g["noisy"].astype(bool)]
        if len(noisy):
            ax.scatter(noisy[axis], noisy["speedup_wall"], s=130, facecolors="none", edgecolors=c,
                       label=f"{variant}: noisy")
        if len(paired):
            ax.plot(paired[axis], paired["speedup_paired"], ls=":", marker="x", color=c, label=f"{variant}: paired")
    ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    _log(ax, "x", base=2); _log(ax, "y")
    ax.set_xticks(sorted(d[axis].unique()))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
    ax.set_xlabel(_xlabel(axis)); ax.set_ylabel("speedup over eager (wall time; >1 faster)")
    _fit_log_ticks(ax, "y")
    _legend(ax)
    _title(fig, f"Speedup over eager along {_xlabel(axis)}{_at(fixed)}, median and 95% CI"
                + (" (x: paired; o: across processes)" if _has_paired(d) else ""), t, model)
    return fig


def _has_paired(d) -> bool:
    """Whether any configuration of these speedups has a paired speedup (paired_eager)."""
    return "speedup_paired" in d and d["speedup_paired"].notna().any()


def _speedup_side_by_side(t, model, d):
    n = max(len(d), 1)
    fig, (ax,) = _fig(w=6.5, h=1.6 + 0.32 * n)
    if d.empty:
        _empty(ax, "no successful variant runs")
    else:
        d = d.assign(_order=tables.paired_first(d)).sort_values("_order")   # as the summary leads
        y = np.arange(len(d))
        lo = (d["speedup_wall"] - d["speedup_wall_lo"]).clip(lower=0).fillna(0)
        hi = (d["speedup_wall_hi"] - d["speedup_wall"]).clip(lower=0).fillna(0)
        for i, r in enumerate(d.itertuples()):
            c = variant_colour(r.variant)
            ax.errorbar([r.speedup_wall], [i], xerr=[[lo.iloc[i]], [hi.iloc[i]]], marker="o", capsize=3,
                        color=c, mfc="none" if bool(r.noisy) else c)
            paired = getattr(r, "speedup_paired", np.nan)
            if paired == paired:
                ax.plot([paired], [i], marker="x", color=c, ls="none")
            label = f"{r.speedup_wall:.2f}x" + (" (noisy)" if bool(r.noisy) else "") \
                if r.speedup_wall == r.speedup_wall else ""
            if paired == paired:
                noisy = " (noisy)" if bool(getattr(r, "noisy_paired", False)) else ""
                label = f"{paired:.2f}x paired{noisy}" + (f"; {label} across" if label else "")
            ax.annotate(label, (np.nanmax([r.speedup_wall, paired]), i), xytext=(6, 4),
                        textcoords="offset points", fontsize=7)
        ax.set_yticks(y); ax.set_yticklabels(d["variant"], fontsize=8)
        ax.axvline(1.0, color="grey", lw=0.8, ls="--")
        _log(ax, "x")
        ax.set_xlabel(f"speedup over eager, batch {int(d['batch'].iloc[0])} (>1: faster)")
        ax.margins(x=0.15)
        _fit_log_ticks(ax, "x")
    _title(fig, "Speedup over eager, median and 95% CI ("
                + ("x: paired; o: across processes, " if _has_paired(d) else "") + "hollow: noisy)", t, model)
    return fig


def speedup_breakdown(t, model):
    """Where each speedup comes from (analysis.decompose): per configuration, the parts of
    the wall-time change as a share of eager's wall time, stacked (saved above zero, added
    below), the total as a diamond."""
    w = t.get("breakdown")
    if w is None:
        w = decompose.breakdown_wide(t["runs"], t["speedups"], t.get("peaks"))
    w = _m(w, model) if len(w) else w
    n = max(len(w), 1)
    longest = max((len(str(v)) for v in w["variant"]), default=0) + 8 if len(w) else 0
    fig, (ax,) = _fig(w=max(5.5, 2.8 + 0.6 * n), h=4.2 + (0.075 * longest if n > 4 else 0))
    if w.empty:
        _empty(ax, "no configuration with both eager and a variant ok")
        _title(fig, "Where the speedup comes from", t, model)
        return fig
    varying = [k for k in decompose.varying_keys(w) if k not in ("model", "batch")]
    w = w.sort_values(varying + ["batch", "variant"]).reset_index(drop=True)
    x = np.arange(len(w))
    base = w["eager_wall_ms"].to_numpy()
    pos, neg = np.zeros(len(w)), np.zeros(len(w))
    for part in decompose.PARTS:
        v = 100 * w[part].fillna(0).to_numpy() / base
        bottom = np.where(v >= 0, pos, neg)
        ax.bar(x, v, 0.62, bottom=bottom, color=PART_COLOURS[part], label=decompose.LABELS[part])
        pos, neg = pos + np.clip(v, 0, None), neg + np.clip(v, None, 0)
    tot = 100 * w["total"].to_numpy() / base
    ax.scatter(x, tot, marker="D", color="k", s=28, zorder=3, label="total (eager - variant)")
    for i, r in w.iterrows():
        ax.annotate(f"{r['speedup_wall']:.2f}x\n{r['total']:+.3g} ms"[0:], (i, max(pos[i], tot[i])),
                    xytext=(0, 3), textcoords="offset points", ha="center", fontsize=6.5)
    ax.axhline(0, color="k", lw=0.8)
    many = len(w) > 4
    sep = ", " if many else "\n"
    labels = [f"{r['variant']}{sep}bs {int(r['batch'])}" + "".join(f"{sep}{k}={r[k]}" for k in varying)
              for _, r in w.iterrows()]
    ax.set_xticks(x); ax.set_xticklabels(labels, fontsize=7, rotation=90 if many else 0)
    for tick, v in zip(ax.get_xticklabels(), w["variant"]):
        tick.set_color(variant_colour(v))
    ax.set_ylabel("wall time saved per iteration, % of eager")
    lo, hi = min(neg.min(), tot.min(), 0), max(pos.max(), tot.max(), 0)
    ax.set_ylim(lo - 0.08 * (hi - lo) - 1, hi + 0.22 * (hi - lo) + 1)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0)
    _title(fig, "Where the speedup comes from (parts add up to the total)", t, model)
    return fig


def kernels_per_iter(t, model):
    fig, (ax,) = _fig()
    d, axis, fixed = _slice(_m(t["speedups"], model).dropna(subset=["kernels_per_iter"]))
    d = d.pivot_table(index=axis, columns="variant", values="kernels_per_iter")
    if d.empty:
        _empty(ax, "no successful runs")
    else:
        d.plot.bar(ax=ax, rot=0, color=[variant_colour(v) for v in d.columns])
        ax.set_xlabel(_xlabel(axis)); ax.set_ylabel("kernels per iteration"); _legend(ax)
    what = "CPU kernels (outermost operators)" if set(t["runs"]["device"].dropna()) == {"cpu"} else "GPU kernels"
    _title(fig, f"{what} per iteration{_at(fixed)}", t, model)
    return fig


def _by_variant_batch(ax, d, col, ylabel, log=True) -> str:
    """Median of col per variant along the main swept axis (_slice); returns the fixed
    label of the other axes."""
    d, axis, fixed = _slice(d)
    for variant, g in d.groupby("variant"):
        g = g.groupby(axis)[col].median().dropna()
        ax.plot(g.index, g.values, marker="o", label=variant, color=variant_colour(variant))
    _log(ax, "x", base=2)
    ax.set_xticks(sorted(d[axis].unique()))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
    if log:
        _log(ax, "y")
        _fit_log_ticks(ax, "y")
    ax.set_xlabel(_xlabel(axis)); ax.set_ylabel(ylabel); _legend(ax)
    return fixed


def launch_overhead(t, model):
    fig, (ax,) = _fig()
    d = _ok(t, model).dropna(subset=["launch_overhead_ratio"])
    if d.empty:
        _empty(ax, f"launch-overhead ratio needs CUDA launch calls:\nnot available for {_label(t['runs'])}")
    else:
        fixed = _by_variant_batch(ax, d, "launch_overhead_ratio", "launch API time / kernel time")
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    _title(fig, f"Launch-overhead ratio{_at(fixed) if not d.empty else ''}", t, model)
    return fig


def idle_breakdown(t, model):
    fig, (ax,) = _fig(w=6.0)
    cols = ["gpu_busy_fraction", "idle_host_wait_frac", "idle_kernel_wait_frac", "idle_other_frac"]
    d, axis, fixed = _slice(_ok(t, model).dropna(subset=["gpu_busy_fraction"]))
    if d.empty:
        _empty(ax, f"GPU idle breakdown needs GPU kernels:\nnot available for {_label(t['runs'])}")
    else:
        g = d.groupby([axis, "variant"])[cols].median()
        variants = [v for _, v in g.index]
        g.index = [f"{'bs' if axis == 'batch' else axis} {b:g}\n{v}" for b, v in g.index]
        g.columns = ["busy", "host wait", "kernel wait", "other"]
        g.plot.bar(ax=ax, stacked=True, rot=0, color=["#4c72b0", "#dd8452", "#55a868", "#8c8c8c"])
        ax.set_ylabel("share of the measured range"); ax.set_ylim(0, 1.02)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0)
        ax.tick_params(axis="x", labelsize=7)
        for tick, v in zip(ax.get_xticklabels(), variants):
            tick.set_color(variant_colour(v))
    _title(fig, f"GPU time: busy and idle (HTA breakdown){_at(fixed)}", t, model)
    return fig


def kernel_durations(t, model):
    fig, (ax,) = _fig()
    d, axis, fixed = _slice(_ok(t, model).dropna(subset=["median_kernel_us"]))
    if d.empty:
        _empty(ax, "no kernels")
    else:
        for i, (variant, g) in enumerate(d.groupby("variant")):
            g = g.groupby(axis)[["p10_kernel_us", "median_kernel_us", "p90_kernel_us"]].median()
            x = g.index * (1.08 ** i)
            ax.errorbar(x, g["median_kernel_us"], yerr=[g["median_kernel_us"] - g["p10_kernel_us"],
                                                        g["p90_kernel_us"] - g["median_kernel_us"]],
                        marker="o", capsize=3, ls="none", label=variant, color=variant_colour(variant))
        _log(ax, "x", base=2); _log(ax, "y")
        ax.set_xticks(sorted(d[axis].unique()))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
        _fit_log_ticks(ax, "y")
        ax.set_xlabel(_xlabel(axis)); ax.set_ylabel("kernel duration (us): p10, median, p90")
        _legend(ax)
    _title(fig, f"Kernel-duration distribution{_at(fixed)}", t, model)
    return fig


MODEL_MARKERS = "osD^vP*XhpH<>d8"


def roofline(t, model):
    """Every ok run (median over repeats) at (arithmetic intensity, achieved FLOP/s), under
    both roofs: the measured copy bandwidth's slope and the measured matmul rate; marker
    per model, colour per variant. Right: the achieved fraction of copy bandwidth."""
    d = _ok(t, model)
    fig, (ax, bx) = _fig(2, w=6.0, h=5.2 + 0.09 * d[["model", "variant"]].nunique().sum())
    peaks = t.get("peaks") or {}
    bw, fl = peaks.get("copy_bandwidth_Bps"), peaks.get("matmul_flops")
    r = d.dropna(subset=["arithmetic_intensity", "achieved_flops"])
    r = tables.with_size(r).groupby(["model", "variant", "batch", "size"], as_index=False)[
        ["arithmetic_intensity", "achieved_flops"]].median()
    if r.empty:
        _empty(ax, "no run with a FLOP count and a GPU time")
    else:
        models = sorted(r["model"].unique())
        for (m, v), g in r.groupby(["model", "variant"]):
            ax.scatter(g["arithmetic_intensity"], g["achieved_flops"] / 1e12, s=26, color=variant_colour(v),
                       marker=MODEL_MARKERS[models.index(m) % len(MODEL_MARKERS)], edgecolors="k", linewidths=0.3)
        ai = r["arithmetic_intensity"]
        ridge = fl / bw if (bw and fl) else None
        lo = min(ai.min(), ridge or ai.min()) / 8
        hi = max(ai.max(), ridge or ai.max()) * 8
        if bw and fl:
            x = np.logspace(np.log10(lo), np.log10(hi), 200)
            ax.plot(x, np.minimum(bw * x, fl) / 1e12, color="k", lw=1.2)
            ax.annotate(f"copy bandwidth {bw / 1e12:.2f} TB/s", (ridge / 6, bw * ridge / 6 / 1e12), rotation=0,
                        xytext=(4, 6), textcoords="offset points", fontsize=7, ha="left")
            ax.annotate(f"matmul {fl / 1e12:.1f} TFLOP/s", (ridge * 1.3, fl / 1e12), xytext=(0, 4),
                        textcoords="offset points", fontsize=7)
            ax.axvline(ridge, color="grey", lw=0.6, ls=":")
        ax.set_xlim(lo, hi)
        _log(ax, "x"); _log(ax, "y")
        _fit_log_ticks(ax, "x"); _fit_log_ticks(ax, "y")
        ax.set_xlabel("FLOP per byte (all FLOPs / ideal fused bytes)"); ax.set_ylabel("achieved TFLOP/s")
        from matplotlib.lines import Line2D
        handles = [Line2D([], [], ls="none", marker=MODEL_MARKERS[i % len(MODEL_MARKERS)], color="grey", label=m)
                   for i, m in enumerate(models)]
        handles += [Line2D([], [], ls="none", marker="s", color=variant_colour(v), label=v)
                    for v in sorted(r["variant"].unique())]
        ax.legend(handles=handles, fontsize=6.5, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=4,
                  title="marker: model, colour: variant", title_fontsize=7)
    b = d.dropna(subset=["copy_bandwidth_frac"])
    if b.empty:
        _empty(bx, "no measured copy bandwidth or GPU time")
    else:
        g = tables.with_size(b).groupby(["model", "batch", "size", "variant"])["copy_bandwidth_frac"].median().unstack("variant")
        g.index = [f"{m}\n{bs}" + ("" if sz == "default" else f"\n{sz}") for m, bs, sz in g.index]
        g.plot.bar(ax=bx, rot=90, color=[variant_colour(v) for v in g.columns], width=0.8)
        bx.axhline(1.0, color="grey", lw=0.8, ls="--")
        bx.set_ylabel("ideal fused bytes / GPU busy time, over copy bandwidth\n(bars: variants, colours as on the left)"); bx.tick_params(axis="x", labelsize=6.5)
        if bx.get_legend():
            bx.get_legend().remove()   # the colours are the variants' (the roofline's legend)
    _title(fig, "Roofline (both roofs measured on this device) and achieved fraction of copy bandwidth", t, model)
    return fig


def over_fusion(t, model):
    """Over-fusion signs (analysis.overfusion), each configuration's first repeat: every GPU
    kernel at (theoretical occupancy, its run configuration's achieved bandwidth), left as a
    fraction of the measured copy bandwidth, right as a fraction of the best variant of the
    same model configuration, with the rule's thresholds. Filled: fused kernels; hollow:
    the others; marker: model; colour: variant; area: GPU time per iteration; red ring:
    spills to local memory; labelled: flagged as likely over-fusion."""
    kr = t.get("kernel_resources")
    kr = overfusion.first_repeat(kr if kr is not None else pd.DataFrame(columns=overfusion.COLUMNS))
    kr = kr[kr["theoretical_occupancy"].notna()] if len(kr) else kr
    title = ("Over-fusion signs: theoretical occupancy of each GPU kernel against its run's achieved bandwidth "
             "(bandwidth per run, not per kernel)")
    if kr.empty:
        fig, (ax,) = _fig(w=6.5)
        _empty(ax, "No GPU kernel data: no run recorded kernel launch resources\n(CPU / torch.profiler backend, "
                   "or an nsys export without GPU kernels)")
        _title(fig, title, t, model)
        return fig
    fig, (ax, bx) = _fig(2, w=5.6, h=5.4)
    kr = kr.assign(fused=kr["fused"].astype(bool), spills=kr["spills"].astype(bool),
                   over_fusion=kr["over_fusion"].astype(bool))
    tmax = kr["time_per_iter_us"].max()
    size = 12 + 380 * np.sqrt(kr["time_per_iter_us"].fillna(0) / tmax) if tmax and tmax > 0 else 30
    kr = kr.assign(_s=size)
    models = sorted(kr["model"].astype(str).unique())
    panels = ((ax, "copy_bandwidth_frac", "achieved bandwidth / measured copy bandwidth\n(run configuration: "
                                          "ideal fused bytes / GPU busy time)"),
              (bx, "bandwidth_vs_best", "achieved bandwidth / best variant of the same\nmodel configuration"))
    for a, col, label in panels:
        d = kr[kr[col].notna() & (kr[col] > 0)] if col in kr else kr.iloc[:0]
        if d.empty:
            _empty(a, "no measured copy bandwidth (device/peaks.json)" if col == "copy_bandwidth_frac"
                   else "no achieved bandwidth (no cost model for these models)")
            continue
        for (m, v, f), g in d.groupby(["model", "variant", "fused"]):
            c = variant_colour(v)
            mk = MODEL_MARKERS[models.index(str(m)) % len(MODEL_MARKERS)]
            a.scatter(g["theoretical_occupancy"], g[col], s=g["_s"], marker=mk, alpha=0.75 if f else 0.55,
                      facecolors=c if f else "none", edgecolors="k" if f else c, linewidths=0.4 if f else 1.0,
                      zorder=3 if f else 2)
        sp = d[d["spills"]]
        if len(sp):
            a.scatter(sp["theoretical_occupancy"], sp[col], s=sp["_s"] * 2.2, facecolors="none",
                      edgecolors="red", linewidths=1.4, zorder=4)
        for r in d[d["over_fusion"]].itertuples():
            a.annotate(textwrap.shorten(str(r.name), 40, placeholder="..."), (r.theoretical_occupancy, getattr(r, col)),
                       xytext=(8, 5), textcoords="offset points", fontsize=6, color="red")
        a.axvline(overfusion.LOW_OCCUPANCY, color="grey", lw=0.8, ls="--")
        a.set_xlim(-0.03, 1.06)
        a.set_xlabel("theoretical occupancy (active warps / max warps per SM)")
        a.set_ylabel(label, fontsize=8)
        if col == "bandwidth_vs_best":
            a.axhline(overfusion.BANDWIDTH_SHARE, color="grey", lw=0.8, ls="--")
            a.fill_between([-0.03, overfusion.LOW_OCCUPANCY], 0, overfusion.BANDWIDTH_SHARE, color="red",
                           alpha=0.06, lw=0)
            a.set_ylim(0, 1.08)
            a.annotate(f"rule: fused, spills or occupancy < {overfusion.LOW_OCCUPANCY:g} (registers / shared "
                       f"memory),\nand under {overfusion.BANDWIDTH_SHARE:g} x the best variant's bandwidth",
                       (0.02, 0.02), xycoords="axes fraction", fontsize=6.5, va="bottom")
        else:
            _log(a, "y")
            a.margins(y=0.15)
            _fit_log_ticks(a, "y")
    from matplotlib.lines import Line2D
    handles = [Line2D([], [], ls="none", marker=MODEL_MARKERS[i % len(MODEL_MARKERS)], color="grey", label=m)
               for i, m in enumerate(models)]
    handles += [Line2D([], [], ls="none", marker="s", color=variant_colour(v), label=v)
                for v in _variant_order(kr["variant"].unique())]
    handles += [Line2D([], [], ls="none", marker="o", mfc="grey", mec="k", label="fused kernel"),
                Line2D([], [], ls="none", marker="o", mfc="none", mec="grey", label="other kernel"),
                Line2D([], [], ls="none", marker="o", mfc="none", mec="red", mew=1.4,
                       label="spills (local memory > 0)")]
    fig.legend(handles=handles, fontsize=6.5, loc="outside lower center", ncol=min(6, len(handles)),
               title="marker: model, colour: variant, area: GPU time per iteration", title_fontsize=7)
    _title(fig, title, t, model)
    return fig


def _span(start, stop) -> str:
    if start != start:
        return "never"
    return f"{start:.0f}" + (f"-{stop:.0f}" if stop == stop else "+")


def crossover(t, model):
    """Per swept axis, a panel: for each model, variant (and the other axes' fixed values),
    the value where it starts to beat eager; the label gives where it stops."""
    c = t["crossover"]
    axes_swept = list(dict.fromkeys(c["axis"])) if "axis" in c else []
    n = max(1, len(axes_swept))
    width = max(5.5, 1.5 + 0.7 * max([(c["axis"] == a).sum() for a in axes_swept] or [1]))
    fig, axs = _fig(n, w=width)
    if c.empty or not axes_swept:
        _empty(axs[0], "no variant besides eager, or no axis with 2 or more values")
    for ax, axis in zip(axs, axes_swept):
        d = c[c["axis"] == axis]
        labels = [f"{m}\n{v}" + (f"\n{f}" if isinstance(f, str) and f else "")
                  for m, v, f in zip(d["model"], d["variant"], d["fixed"])]
        y = d["starts_at"]
        ax.bar(range(len(d)), y.fillna(0), color=[variant_colour(v) if b == b else "#dddddd"
                                                  for v, b in zip(d["variant"], y)])
        labels_at = d["spans"] if "spans" in d else [None] * len(d)
        for i, (a, b, sp) in enumerate(zip(y, d["stops_at"], labels_at)):
            text = sp if isinstance(sp, str) and sp else _span(a, b)
            ax.text(i, (a if a == a else 1), text, ha="center", va="bottom", fontsize=7)
        ax.set_xticks(range(len(d))); ax.set_xticklabels(labels, fontsize=6)
        _log(ax, "y", base=2)
        ax.set_ylabel(f"{axis} where the variant starts to beat eager")
    _title(fig, "Crossover: where each variant last starts to beat eager (bar); label: every "
           "interval where it beats eager (start-stop, + = still at the largest value); from the paired "
           "speedups where every value was paired, else those across processes", t, model)
    return fig


# above this many bars a sweep-wide figure is drawn as a grid (rows: models, columns:
# variants, the value written in each cell): the zoo's 130 bars made a 15000-pixel strip
MAX_BARS = 24


def _variant_order(variants) -> list[str]:
    """Variants in the catalog's order (eager first), others after, sorted."""
    known = ["eager"] + [v for v in registry_data.variant_names() if v != "eager"]
    present = set(variants)
    return [v for v in known if v in present] + sorted(present - set(known))


def _grid(ax, values: pd.Series, fmt: str, label: str, centre: float | None = None, cmap: str = "viridis",
          rows: list | None = None, cols: list | None = None):
    """values indexed by (row label, variant), drawn as a grid with each value written in
    its cell; a cell with no value is left blank, one <= 0 is written on white. centre: a
    diverging colour scale around it (log-symmetric, for ratios); else a log scale over at most 3 decades
    below the largest value (smaller ones take its lowest colour). rows, cols: the grid's
    order (two panels side by side share it); by default those of values."""
    from matplotlib.colors import LogNorm, TwoSlopeNorm
    rows = rows if rows is not None else list(dict.fromkeys(values.index.get_level_values(0)))
    cols = cols if cols is not None else _variant_order(values.index.get_level_values(1))
    m = values.unstack().reindex(index=rows, columns=cols).to_numpy(dtype=float)
    finite = m[np.isfinite(m) & (m > 0)]
    if centre is not None and finite.size:
        lo, hi = np.log(finite.min() / centre), np.log(finite.max() / centre)
        reach = max(abs(lo), abs(hi), 1e-3)
        norm = TwoSlopeNorm(vcenter=0.0, vmin=-reach, vmax=reach)
        shown = np.log(np.where(m > 0, m, np.nan) / centre)
        im = ax.imshow(shown, cmap="RdBu_r", norm=norm, aspect="auto")
    else:
        low = max(finite.min(), finite.max() * 1e-3) if finite.size else None
        norm = LogNorm(vmin=low, vmax=max(finite.max(), low * 1.01), clip=True) if finite.size else None
        im = ax.imshow(np.where(m > 0, m, np.nan), cmap=cmap, norm=norm, aspect="auto")
    for i in range(len(rows)):
        for j in range(len(cols)):
            if np.isfinite(m[i, j]):   # a value <= 0 (off a log scale) is written on white
                rgba = im.cmap(im.norm(shown[i, j] if centre is not None else m[i, j])) if m[i, j] > 0 else (1, 1, 1)
                dark = 0.299 * rgba[0] + 0.587 * rgba[1] + 0.114 * rgba[2] < 0.5
                ax.text(j, i, format(m[i, j], fmt), ha="center", va="center", fontsize=6.5,
                        color="white" if dark else "black")
    ax.set_xticks(range(len(cols)))
    ax.set_xticklabels(cols, rotation=60, ha="right", fontsize=7)
    for tick, v in zip(ax.get_xticklabels(), cols):
        tick.set_color(variant_colour(v))
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(rows, fontsize=7)
    ax.set_title(label, fontsize=8)


def _grid_size(rows: int, cols: int) -> tuple[float, float]:
    """Inches (width, height) of one grid panel of rows x cols cells, with its labels."""
    return 1.6 + 0.48 * cols, 1.8 + 0.3 * rows


def compile_cost(t, model):
    """Compilation latency (median of cold compiles) and peak-memory compression ratio
    (eager / variant) per model and variant: bars, or a grid for a large sweep."""
    s = t["speedups"]
    s = s[(s["variant"] != "eager") & (s["status"] == "ok")]
    d = s.groupby(["model", "variant"])[["compilation_latency_s", "compression_ratio"]].median()
    if len(d) > MAX_BARS:
        w, h = _grid_size(d.index.get_level_values(0).nunique(), d.index.get_level_values(1).nunique())
        fig, (ax, bx) = _fig(2, w=w, h=h)
        rows = list(dict.fromkeys(d.index.get_level_values(0)))
        cols = _variant_order(d.index.get_level_values(1))
        _grid(ax, d["compilation_latency_s"].dropna(), ".2f", "compilation latency (s), cold compiles' median",
              cmap="YlOrRd", rows=rows, cols=cols)
        _grid(bx, d["compression_ratio"].dropna(), ".2f", "eager peak memory / variant peak memory "
              "(red: the variant uses less)", centre=1.0, rows=rows, cols=cols)
        _title(fig, "Compile cost (Inductor harness definitions)", t, model)
        return fig
    fig, (ax, bx) = _fig(2, w=max(5.5, 1.0 + 0.45 * len(d)))
    if d.dropna(how="all").empty:
        _empty(ax, "no compiled variant ran"); _empty(bx, "")
    else:
        colours = [variant_colour(v) for _, v in d.index]
        d.index = [f"{m}\n{v}" for m, v in d.index]
        ax.bar(range(len(d)), d["compilation_latency_s"].fillna(0), color=colours)
        ax.set_ylabel("compilation latency (s)")
        bx.bar(range(len(d)), d["compression_ratio"].fillna(0), color=colours)
        bx.axhline(1.0, color="grey", lw=0.8, ls="--")
        bx.set_ylabel("eager peak memory / variant peak memory")
        for a in (ax, bx):
            a.set_xticks(range(len(d))); a.set_xticklabels(d.index, fontsize=6.5 if len(d) > 6 else 8,
                                                           rotation=90 if len(d) > 6 else 0)
    _title(fig, "Compile cost (Inductor harness definitions)", t, model)
    return fig


def profiler_overhead(t, model):
    """The profiler's own cost per run: traced / untraced wall time per iteration, each
    repeat a dot, the median a bar, in the variant's colour; for a large sweep a grid of
    the medians (rows: model and batch, columns: variants)."""
    r = t["runs"]
    r = r[(r["status"] == "ok")].dropna(subset=["profiler_overhead"]) if "profiler_overhead" in r else r.iloc[:0]
    r = tables.with_size(r)
    keys = r.groupby(["model", "batch", "size", "variant"]).size().index.tolist() if len(r) else []
    title = "The profiler's own cost per run (model, batch, variant; dots: repeats)"
    if len(keys) > MAX_BARS:
        row = r["model"] + " " + r["batch"].astype(str) + np.where(r["size"] == "default", "", " " + r["size"].astype(str))
        med = r.assign(row=row).groupby(["row", "variant"], sort=False)["profiler_overhead"].median()
        w, h = _grid_size(med.index.get_level_values(0).nunique(), med.index.get_level_values(1).nunique())
        fig, (ax,) = _fig(w=w + 1.5, h=h)
        _grid(ax, med, ".2f", "traced / untraced wall time per iteration, median of repeats "
              "(red: tracing slowed the run)", centre=1.0)
        _title(fig, "The profiler's own cost per run (rows: model and batch)", t, model)
        return fig
    fig, (ax,) = _fig(w=max(5.5, 1.2 + 0.32 * len(keys)))
    if not keys:
        _empty(ax, "no run with both a traced and an untraced wall time")
    else:
        for i, (m, b, sz, v) in enumerate(keys):
            g = r[(r["model"] == m) & (r["batch"] == b) & (r["size"] == sz) & (r["variant"] == v)]["profiler_overhead"]
            ax.bar(i, g.median() - 1, bottom=1, color=variant_colour(v), alpha=0.55, width=0.7)
            ax.scatter(np.full(len(g), i), g, color=variant_colour(v), edgecolors="k", linewidths=0.3, s=14, zorder=3)
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        ax.set_xticks(range(len(keys)))
        ax.set_xticklabels([f"{m} {b}{'' if sz == 'default' else ' ' + sz}  {v}" for m, b, sz, v in keys],
                           rotation=90, fontsize=6.5)
        for tick, (_, _, _, v) in zip(ax.get_xticklabels(), keys):
            tick.set_color(variant_colour(v))
        ax.set_ylabel("traced / untraced wall time per iteration")
    _title(fig, title, t, model)
    return fig


def scaling(t, model):
    """The scaling law per swept axis (rows) and value of the other axes (columns): each
    variant's untraced wall time per iteration (filled dots: median of the repeats, bars:
    their range; solid line: the fit t = a + b * size^k, analysis.scaling) and its GPU time
    (hollow dots, dashed fit), log-log."""
    fits = _m(t["scaling"], model)
    runs = tables.with_size(_ok(t, model))
    panels = sorted({(a, f if isinstance(f, str) else "") for a, f in zip(fits["axis"], fits["fixed"])},
                    key=lambda p: (p[0], sorted(tables.parse_fixed_label(p[1]).items()))) if len(fits) else []
    axes_swept = list(dict.fromkeys(a for a, _ in panels))
    cols = max([sum(1 for a, _ in panels if a == ax) for ax in axes_swept] or [1])
    fig, grid = plt.subplots(max(1, len(axes_swept)), cols, squeeze=False, layout="constrained",
                             figsize=(max(7.0, 3.4 * cols), 3.2 * max(1, len(axes_swept)) + 0.7))
    for ax in grid.flat:
        ax.set_visible(False)
    if not panels:
        grid[0, 0].set_visible(True)
        _empty(grid[0, 0], "no axis with 3 or more sizes (the scaling law needs 3)")
    metrics = {"wall": ("wall_time_per_iter_ms", "-", True), "gpu": ("gpu_time_per_iter_ms", "--", False)}
    varying = [k for k in scaling_law.KEYS[2:] if k in fits and fits[k].nunique() > 1]   # mode, dtype, ...
    for row, axis in enumerate(axes_swept):
        for col, fixed in enumerate(f for a, f in panels if a == axis):
            ax = grid[row, col]
            ax.set_visible(True)
            f = fits[(fits["axis"] == axis) & (fits["fixed"].fillna("") == fixed)]
            d = runs
            for a, v in tables.parse_fixed_label(fixed).items():
                d = d[d[a].isna()] if v != v else d[d[a] == v]   # nan: runs without that axis
            for _, r in f.sort_values(["metric", "variant"], ascending=[False, True]).iterrows():
                if r["metric"] not in metrics:
                    continue
                col_name, ls, filled = metrics[r["metric"]]
                c = variant_colour(r["variant"])
                mine = d[d["variant"] == r["variant"]]
                for k in varying:                        # e.g. two dtypes in one sweep
                    mine = mine[mine[k] == r[k]]
                g = mine.groupby(axis)[col_name].agg(["median", "min", "max"]).dropna()
                if g.empty:
                    continue
                ax.errorbar(g.index, g["median"], yerr=[g["median"] - g["min"], g["max"] - g["median"]],
                            fmt="o", color=c, ms=4, capsize=2, mfc=c if filled else "white")
                x = np.geomspace(g.index.min(), g.index.max(), 60)
                ci = f" [{r['k_lo']:.2f}, {r['k_hi']:.2f}]" if r["k_lo"] == r["k_lo"] else ""
                edge = " (k at edge)" if "edge" in str(r.get("note", "")) else ""
                also = "".join(f" {r[k]}" for k in varying)
                ax.plot(x, r["a_ms"] + r["b"] * x ** r["k"], color=c, lw=1.1, ls=ls,
                        label=f"{r['variant']}{also} {r['metric']}: k={r['k']:.2f}{ci}{edge}")
                if r["metric"] == "wall" and r["fixed_size"] == r["fixed_size"] \
                        and g.index.min() <= r["fixed_size"] <= g.index.max():
                    ax.axvline(r["fixed_size"], color=c, lw=0.8, ls=":")
            _log(ax, "x", base=2); _log(ax, "y")
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
            _fit_log_ticks(ax, "y")
            ax.set_xlabel(_xlabel(axis), fontsize=8)
            ax.set_ylabel("time per iteration (ms)", fontsize=8)
            ax.tick_params(labelsize=7)
            exact = " (3 sizes: exact fit, no CI)" if len(f) and (f["n_sizes"] <= 3).all() else ""
            ax.set_title((fixed or f"along {_xlabel(axis)}") + exact, fontsize=8)
            _legend(ax, loc="best", fontsize=6.5)
    _title(fig, "Scaling law t = a + b * size^k: filled dots and solid lines wall time (untraced), hollow "
           "dots and dashed lines GPU time; bars: the repeats' range; legend: k [95% CI]; dotted: "
           "the size below which the fixed cost a dominates the wall time", t, model)
    return fig


# name: (function, scope, report category); names, scopes and categories from analysis.figures
FIGURES = {name: (globals()[name], scope, category) for name, (scope, category) in figures.FIGURES.items()}


def load_tables(runs_csv, speedups_csv, crossover_csv=None, peaks_json=None, scaling_csv=None,
                kernel_resources_csv=None) -> dict:
    """The tables a figure reads; `breakdown` (analysis.decompose.breakdown_wide) is
    computed from runs, speedups and peaks; `scaling` (analysis.scaling) is read from
    scaling_csv, else fitted from runs; `kernel_resources` (analysis.overfusion) from
    kernel_resources_csv, else empty."""
    t = {"runs": pd.read_csv(runs_csv), "speedups": pd.read_csv(speedups_csv)}
    t["kernel_resources"] = pd.read_csv(kernel_resources_csv) \
        if kernel_resources_csv and os.path.exists(kernel_resources_csv) else pd.DataFrame(columns=overfusion.COLUMNS)
    t["scaling"] = pd.read_csv(scaling_csv) if scaling_csv and os.path.exists(scaling_csv) \
        else scaling_law.table(t["runs"])
    t["crossover"] = pd.read_csv(crossover_csv) if crossover_csv and os.path.exists(crossover_csv) \
        else pd.DataFrame(columns=["model", "variant", "axis", "fixed", "starts_at", "stops_at", "note"])
    t["peaks"] = {}
    if peaks_json and os.path.exists(peaks_json):
        with open(peaks_json) as f:
            t["peaks"] = json.load(f)
    t["breakdown"] = decompose.breakdown_wide(t["runs"], t["speedups"], t["peaks"])
    return t


def save(fig, png: str, svg: str | None = None) -> None:
    for path in filter(None, (png, svg)):
        with atomic_path(path) as tmp:
            fig.savefig(tmp, dpi=130)
    plt.close(fig)


def render(name: str, tables: dict, outputs: dict) -> None:
    """outputs: scope (a model name or SWEEP) -> (png, svg)."""
    fn, scope, _ = FIGURES[name]
    for key, (png, svg) in outputs.items():
        save(fn(tables, None if key == SWEEP else key), png, svg)
