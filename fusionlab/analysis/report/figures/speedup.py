"""Speedup figures: the speedup over eager along the main swept axis (or the variants side
by side at one batch size), and where each speedup comes from (tables/speedup_breakdown.csv)."""
from __future__ import annotations

import numpy as np

from fusionlab.analysis.report import style
from fusionlab.analysis.report.slicing import by_model, main_axis
from fusionlab.analysis.report.style import variant_colour
from fusionlab.analysis.sweep import decompose, tables

PART_COLOURS = {"host": "#4c72b0", "traffic": "#55a868", "kernels": "#c44e52", "remainder": "#b0b0b0"}


def _has_paired(d) -> bool:
    """Whether any configuration of these speedups has a paired speedup (paired_eager)."""
    return "speedup_paired" in d and d["speedup_paired"].notna().any()


def speedup_vs_batch(t, model):
    """Every variant of the model on one plot: speedup vs batch with 95% CIs (lines), or,
    where the model ran at one batch size, the variants side by side."""
    d = by_model(t["speedups"], model)
    d = d[(d["variant"] != "eager") & tables.paired_first(d).notna()]
    d, axis, fixed = main_axis(d)
    if d[axis].nunique() <= 1:
        return _side_by_side(t, model, d)
    fig, (ax,) = style.figure()
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
    style.log_axis(ax, "x", base=2); style.log_axis(ax, "y")
    style.plain_x_ticks(ax, d[axis].unique())
    ax.set_xlabel(style.xlabel(axis)); ax.set_ylabel("speedup over eager (wall time; >1 faster)")
    style.fit_log_ticks(ax, "y")
    style.legend(ax)
    style.title(fig, f"Speedup over eager along {style.xlabel(axis)}{style.at(fixed)}, median and 95% CI"
                + (" (x: paired; o: across processes)" if _has_paired(d) else ""), t, model)
    return fig


def _side_by_side(t, model, d):
    """The variants at one batch size, in the order of the speedup the summary leads with."""
    n = max(len(d), 1)
    fig, (ax,) = style.figure(w=6.5, h=1.6 + 0.32 * n)
    if d.empty:
        style.empty(ax, "no successful variant runs")
    else:
        d = d.assign(_order=tables.paired_first(d)).sort_values("_order")
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
        style.log_axis(ax, "x")
        ax.set_xlabel(f"speedup over eager, batch {int(d['batch'].iloc[0])} (>1: faster)")
        ax.margins(x=0.15)
        style.fit_log_ticks(ax, "x")
    style.title(fig, "Speedup over eager, median and 95% CI ("
                + ("x: paired; o: across processes, " if _has_paired(d) else "") + "hollow: noisy)", t, model)
    return fig


def speedup_breakdown(t, model):
    """Where each speedup comes from (t["breakdown"]: one row per configuration, the parts
    of decompose.PARTS, total, eager_wall_ms and speedup_wall): the parts of the wall-time
    change as a share of eager's wall time, stacked (saved above zero, added below), the
    total as a diamond."""
    w = t["breakdown"]
    w = by_model(w, model) if len(w) else w
    n = max(len(w), 1)
    longest = max((len(str(v)) for v in w["variant"]), default=0) + 8 if len(w) else 0
    fig, (ax,) = style.figure(w=max(5.5, 2.8 + 0.6 * n), h=4.2 + (0.075 * longest if n > 4 else 0))
    if w.empty:
        style.empty(ax, "no configuration with both eager and a variant ok")
        style.title(fig, "Where the speedup comes from", t, model)
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
        ax.annotate(f"{r['speedup_wall']:.2f}x\n{r['total']:+.3g} ms", (i, max(pos[i], tot[i])),
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
    style.title(fig, "Where the speedup comes from (parts add up to the total)", t, model)
    return fig
