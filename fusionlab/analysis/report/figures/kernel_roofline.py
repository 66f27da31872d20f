"""The per-kernel hierarchical roofline of one model (Nsight Compute's convention,
analysis.sweep.roofline): each kernel of each variant at its largest profiled
configuration (the top kernels by time, the rest summed) at two intensities joined by a
line, DRAM (filled) and L2 (hollow), under the GPU's own roofs; the model's point as a
labelled estimate."""
from __future__ import annotations

import numpy as np

from fusionlab.analysis.report import style
from fusionlab.analysis.report.style import variant_colour, variant_order
from fusionlab.analysis.report.text import fmt_flops, fmt_rate
from fusionlab.analysis.sweep import roofline as sweep_roofline


# this module's figures (read as data by the package: no import, no matplotlib); `needs`
# names when the figure has something to draw (figures.NEEDS); the drawing function is
# the figure's name
FIGURES = [
    {
        'name': 'kernel_roofline',
        'scope': 'model',
        'category': '4. Roofline',
        'needs': 'kernel_roofline',
        'caption': ('Each kernel of {model} (the top kernels by time under Nsight Compute, the rest summed) '
                    'at its DRAM intensity (filled, cold bytes) and its L2 intensity (hollow), achieved '
                    "FLOP/s counted as Nsight Compute's roofline counts them, under the GPU's own "
                    "peak-sustained roofs from the same report; the percentage is the kernel's fraction of "
                    "its roof (compute roof past the ridge, bandwidth below it); crosses are the model's "
                    'estimate.'),
        'shows': ("each kernel's achieved FLOP/s at its DRAM and L2 intensity under the GPU's own roofs"),
    },
]


def _largest(t):
    """Each variant's rows of the largest batch that has them."""
    return t[t["batch"] == t.groupby("variant")["batch"].transform("max")]


def kernel_roofline(t, model):
    """Achieved FLOP/s against FLOP per byte of each kernel (module doc); roofs: DRAM and
    L2 bandwidth slopes, the FP32 and tensor rates, each named with its value and source."""
    k = sweep_roofline.kernel_roofline(t["kernels"][t["kernels"]["model"] == model] if len(t["kernels"]) else None)
    k = k.dropna(subset=["achieved_flops", "dram_intensity"])
    k = k[(k["achieved_flops"] > 0) & (k["dram_intensity"] > 0)]   # a kernel without FLOPs (a copy) has no point
    if k.empty:
        raise style.NoData("no kernel with measured FLOPs (ncu pass `roofline`)")
    k = _largest(k)
    devices = set(t["kernels"].loc[t["kernels"]["model"] == model, "device"].dropna()) if "device" in t["kernels"] else set()
    device = devices.pop() if len(devices) == 1 else None
    fig, (ax,) = style.figure(1, w=6.4, h=4.8)
    for v in variant_order(k["variant"].unique()):
        g = k[k["variant"] == v]
        c = variant_colour(v)
        for _, r in g.iterrows():
            keys = {**{c: r[c] for c in sweep_roofline.KEYS}, "device": device, "kernel": r["kernel"]}
            for q in ("dram_intensity", "achieved_flops", "l2_intensity"):
                if r[q] == r[q]:
                    style.record(fig, **keys, mark="point", quantity=f"kernel_roofline.{q}", value=r[q])
            y = r["achieved_flops"] / 1e12
            if r["l2_intensity"] == r["l2_intensity"]:
                ax.plot([r["dram_intensity"], r["l2_intensity"]], [y, y], color=c, lw=0.5, alpha=0.6)
                ax.scatter([r["l2_intensity"]], [y], s=22, facecolors="none", edgecolors=c, linewidths=0.8)
            ax.scatter([r["dram_intensity"]], [y], s=22, color=c, edgecolors="k", linewidths=0.3, zorder=3)
            label = r["kernel"][:28]
            if r["fraction_of_roof"] == r["fraction_of_roof"]:
                label += " " + style.noted(fig, "share", r["fraction_of_roof"], **keys, mark="label",
                                           quantity="kernel_roofline.fraction_of_roof")
            ax.annotate(label, (r["dram_intensity"], y), xytext=(3, 2), textcoords="offset points", fontsize=5,
                        color=c)
    roofs = k[sweep_roofline.ROOFS].median()
    xs = np.concatenate([k["dram_intensity"].values, k["l2_intensity"].dropna().values])
    lo, hi = xs.min() / 10, xs.max() * 10
    x = np.geomspace(lo, hi, 200)
    top = np.nanmax([roofs["roof_fp32_flops"], roofs["roof_tensor_flops"]])
    for key, name, ls in (("roof_dram_Bps", "DRAM", "-"), ("roof_l2_Bps", "L2", "--")):
        if roofs[key] == roofs[key]:
            ax.plot(x, np.minimum(roofs[key] * x, top) / 1e12, color="k", lw=1, ls=ls,
                    label=f"{name} {fmt_rate(roofs[key])} (ncu peak sustained)")
    for key, name, ls in (("roof_fp32_flops", "FP32", ":"), ("roof_tensor_flops", "tensor (dense)", "-.")):
        if roofs[key] == roofs[key]:
            ax.axhline(roofs[key] / 1e12, color="grey", lw=0.9, ls=ls,
                       label=f"{name} {fmt_flops(roofs[key])} (ncu peak sustained)")
    est = t["runs"][(t["runs"]["model"] == model)] if "flops" in t["runs"] else t["runs"].iloc[:0]
    if len(est) and {"bytes_fused", "achieved_flops"} <= set(est):
        e = est.dropna(subset=["achieved_flops", "bytes_fused"])
        e = e[e["bytes_fused"] > 0]
        if len(e):
            fl = e["flops"].fillna(0) + e.get("flops_pointwise", 0)
            ax.scatter(fl / e["bytes_fused"], e["achieved_flops"] / 1e12, marker="x", s=16, color="0.5",
                       label="estimate: the model's FLOPs / ideal fused bytes")
    ax.set_xlim(lo, hi)
    style.log_axis(ax, "x"); style.log_axis(ax, "y")
    ax.set_xlabel("FLOP per byte (filled: DRAM, cold bytes; hollow: L2 to L1)", fontsize=7)
    ax.set_ylabel("achieved TFLOP/s (Nsight Compute FLOPs / kernel time)", fontsize=7)
    ax.legend(fontsize=5.5, loc="lower right", frameon=False,
              title="colour: variant; % = fraction of the kernel's roof", title_fontsize=6)
    style.title(fig, "Per-kernel hierarchical roofline under the GPU's own roofs", t, model)
    return fig
