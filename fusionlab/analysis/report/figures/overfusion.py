"""Over-fusion signs (tables/kernel_resources.csv, sweep.overfusion): every GPU kernel at
its theoretical occupancy against its run configuration's achieved bandwidth."""
from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from fusionlab.analysis.report import style
from fusionlab.analysis.report.figures.kernels import display_name
from fusionlab.analysis.report.figures.roofline import free_corner_text
from fusionlab.analysis.report.style import MODEL_MARKERS, variant_colour, variant_order
from fusionlab.analysis.sweep import overfusion

# this module's figures (read as data by the package: no import, no matplotlib); `needs`
# names when the figure has something to draw (figures.NEEDS); the drawing function is
# the figure's name
FIGURES = [
    {
        'name': 'over_fusion',
        'scope': 'sweep',
        'category': '3. Kernels and fusion',
        'needs': 'cuda_nsys',
        'caption': ("Every GPU kernel's theoretical occupancy against its run's achieved bandwidth; fused "
                    'kernels filled, spills ringed red, likely over-fusion labelled.'),
        'shows': ("each fused kernel's occupancy against its run's achieved bandwidth (red ring: spills)"),
    },
]


MAX_LABELS = 8   # flagged kernels named in a panel, by GPU time
TITLE = "Over-fusion signs: occupancy of each GPU kernel against its bandwidth"


def over_fusion(t, model):
    """Each configuration's first repeat: every GPU kernel at (theoretical occupancy, its
    run configuration's achieved bandwidth), left as a fraction of the measured copy
    bandwidth, right the rule's share: the kernel's measured DRAM bandwidth over the
    fastest kernel's of the same model configuration where Nsight Compute measured it
    (kernel_bandwidth_vs_best), else the run's over the best variant's, with the rule's
    thresholds. Filled: fused kernels; hollow: the others; marker: model;
    colour: variant; area: GPU time per iteration; red ring: spills to local memory;
    labelled: flagged as likely over-fusion."""
    kr = t.get("kernel_resources")
    kr = overfusion.first_repeat(kr if kr is not None else pd.DataFrame(columns=overfusion.COLUMNS))
    kr = kr[kr["theoretical_occupancy"].notna()] if len(kr) else kr
    if kr.empty:
        raise style.NoData("No GPU kernel data: no run recorded kernel launch resources (CPU / torch.profiler "
                           "backend, or an nsys export without GPU kernels)")
    missing = [why for col, why in (("copy_bandwidth_frac", "no measured copy bandwidth (device/peaks.json)"),
                                    ("bandwidth_vs_best", "no achieved bandwidth (no cost model for these models)"))
               if col not in kr or not (kr[col] > 0).any()]
    if len(missing) == 2:
        raise style.NoData("; ".join(missing))
    fig, (ax, bx) = style.figure(2, w=5.6, h=5.4)
    kr = kr.assign(fused=kr["fused"].astype(bool), spills=kr["spills"].astype(bool),
                   over_fusion=kr["over_fusion"].astype(bool))
    tmax = kr["time_per_iter_us"].max()
    size = 12 + 380 * np.sqrt(kr["time_per_iter_us"].fillna(0) / tmax) if tmax and tmax > 0 else 30
    kr = kr.assign(_s=size)
    own = kr["kernel_bandwidth_vs_best"] if "kernel_bandwidth_vs_best" in kr else pd.Series(np.nan, index=kr.index)
    kr = kr.assign(rule_share=own.where(own.notna(), kr["bandwidth_vs_best"]),
                   _rule_col=np.where(own.notna(), "kernel_bandwidth_vs_best", "bandwidth_vs_best"))
    n_own = int(own.notna().sum())
    right = ("bandwidth / best: the kernel's DRAM bandwidth (Nsight Compute)\nover the fastest kernel's"
             + (f" ({n_own} of {len(kr)} kernels), else\nthe run's over the best variant's" if n_own < len(kr) else "")
             if n_own else "achieved bandwidth / best variant of the same\nmodel configuration")
    models = sorted(kr["model"].astype(str).unique())
    n_fused = int(kr["fused"].sum())   # every kernel's, the same count in both panels
    if kr["repeat"].nunique() == 1:    # the rows the count is of: one repeat's
        style.record(fig, repeat=int(kr["repeat"].iloc[0]), mark="count", quantity="kernel_resources.fused",
                     agg="trues", value=n_fused)
    panels = ((ax, "copy_bandwidth_frac", "achieved bandwidth / measured copy bandwidth\n(run configuration: "
                                          "ideal fused bytes / GPU busy time)"),
              (bx, "rule_share", right))
    for a, col, label in panels:
        d = kr[kr[col].notna() & (kr[col] > 0)] if col in kr else kr.iloc[:0]
        if d.empty:
            style.empty(a, "no measured copy bandwidth (device/peaks.json)" if col == "copy_bandwidth_frac"
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
        for _, r in d.iterrows():
            keys = {**style.keys_of(r), "repeat": int(r["repeat"]), "name": r["name"], "full_name": r["full_name"]}
            style.record(fig, **keys, mark="point x", quantity="kernel_resources.theoretical_occupancy",
                         value=r["theoretical_occupancy"])
            style.record(fig, **keys, mark="point y", value=r[col], quantity="kernel_resources." +
                         (r["_rule_col"] if col == "rule_share" else col))
        shown = f" ({len(d)} of {len(kr)} kernels have this bandwidth)" if len(d) < len(kr) else ""
        flagged = d[d["over_fusion"]].sort_values("time_per_iter_us", ascending=False)
        flagged = flagged.assign(_label=[display_name(n, f) for n, f in zip(flagged["name"], flagged["full_name"])])
        named = flagged.drop_duplicates("_label").head(MAX_LABELS)
        style.place_labels(a, [(r["theoretical_occupancy"], r[col], r["_label"], {"fontsize": 5.5, "color": "red"})
                               for _, r in named.iterrows()], markers=list(zip(d["theoretical_occupancy"], d[col])))
        if len(flagged) > len(named):
            a.text(0.01, 0.99, f"{len(flagged)} kernels flagged ({flagged['_label'].nunique()} names); the "
                   f"{len(named)} with the most GPU time named (all: tables/kernel_resources.csv)",
                   transform=a.transAxes, ha="left", va="top", fontsize=6, color="red")
        a.axvline(overfusion.LOW_OCCUPANCY, color="grey", lw=0.8, ls="--")
        a.set_xlim(-0.03, 1.06)
        a.set_xlabel("theoretical occupancy (active warps / max warps per SM)")
        a.set_ylabel(label, fontsize=8)
        if col == "rule_share":
            a.axhline(overfusion.BANDWIDTH_SHARE, color="grey", lw=0.8, ls="--")
            low = min(float(d[col].min()) / 1.5, overfusion.BANDWIDTH_SHARE / 2)
            a.fill_between([-0.03, overfusion.LOW_OCCUPANCY], low, overfusion.BANDWIDTH_SHARE, color="red",
                           alpha=0.06, lw=0)
            style.log_axis(a, "y")
            a.set_ylim(low, max(1.2, float(d[col].max()) * 1.3))   # every kernel in view
            style.fit_log_ticks(a, "y")
            a.set_title(f"rule: fused, spills or occupancy < {overfusion.LOW_OCCUPANCY:g} (registers / shared "
                        f"memory),\nand under {overfusion.BANDWIDTH_SHARE:g} x the best's bandwidth (shaded)",
                        fontsize=7, loc="left")
        else:
            style.log_axis(a, "y")
            a.margins(y=0.15)
            style.fit_log_ticks(a, "y")
        if not d["over_fusion"].any():   # in the corner with the fewest kernels under it
            free_corner_text(a, f"no kernel flagged as likely over-fusion\n({n_fused} fused kernels{shown})",
                             list(zip(d["theoretical_occupancy"], d[col])), fontsize=6.5, color="0.3")
    handles = [Line2D([], [], ls="none", marker=MODEL_MARKERS[i % len(MODEL_MARKERS)], color="grey", label=m)
               for i, m in enumerate(models)]
    handles += [Line2D([], [], ls="none", marker="s", color=variant_colour(v), label=v)
                for v in variant_order(kr["variant"].unique())]
    handles += [Line2D([], [], ls="none", marker="o", mfc="grey", mec="k", label="fused kernel"),
                Line2D([], [], ls="none", marker="o", mfc="none", mec="grey", label="other kernel"),
                Line2D([], [], ls="none", marker="o", mfc="none", mec="red", mew=1.4,
                       label="spills (local memory > 0)")]
    style.legend_below(fig, handles, fontsize=6.5, title="marker: model, colour: variant, area: GPU time per iteration",
                       title_fontsize=7)
    style.title(fig, TITLE, t, model)
    return fig
