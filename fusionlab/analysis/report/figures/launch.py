"""Launch overhead and idle time: the launch-overhead ratio per variant along the main
swept axis, and the GPU's busy and idle shares (HTA's breakdown)."""
from __future__ import annotations

from fusionlab.analysis.report import style
from fusionlab.analysis.report.slicing import main_axis, ok_runs
from fusionlab.analysis.report.style import variant_colour

IDLE_COLOURS = ["#4c72b0", "#dd8452", "#55a868", "#8c8c8c"]


def _by_variant(ax, d, col, ylabel, log=True) -> str:
    """Median of col per variant along the main swept axis (main_axis); returns the fixed
    label of the other axes."""
    d, axis, fixed = main_axis(d)
    for variant, g in d.groupby("variant"):
        g = g.groupby(axis)[col].median().dropna()
        ax.plot(g.index, g.values, marker="o", label=variant, color=variant_colour(variant))
    style.log_axis(ax, "x", base=2)
    style.plain_x_ticks(ax, d[axis].unique())
    if log:
        style.log_axis(ax, "y")
        style.fit_log_ticks(ax, "y")
    ax.set_xlabel(style.xlabel(axis)); ax.set_ylabel(ylabel); style.legend(ax)
    return fixed


def launch_overhead(t, model):
    """Launch API time / kernel time per variant (CUDA launch calls only)."""
    fig, (ax,) = style.figure()
    d = ok_runs(t, model).dropna(subset=["launch_overhead_ratio"])
    if d.empty:
        style.empty(ax, "launch-overhead ratio needs CUDA launch calls:\nnot available for "
                        f"{style.setup_label(t['runs'])}")
    else:
        fixed = _by_variant(ax, d, "launch_overhead_ratio", "launch API time / kernel time")
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    style.title(fig, f"Launch-overhead ratio{style.at(fixed) if not d.empty else ''}", t, model)
    return fig


def idle_breakdown(t, model):
    """The measured range's GPU time as busy, host wait, kernel wait and other idle shares,
    a stacked bar per variant and value of the main swept axis."""
    fig, (ax,) = style.figure(w=6.0)
    cols = ["gpu_busy_fraction", "idle_host_wait_frac", "idle_kernel_wait_frac", "idle_other_frac"]
    d, axis, fixed = main_axis(ok_runs(t, model).dropna(subset=["gpu_busy_fraction"]))
    if d.empty:
        style.empty(ax, f"GPU idle breakdown needs GPU kernels:\nnot available for {style.setup_label(t['runs'])}")
    else:
        g = d.groupby([axis, "variant"])[cols].median()
        variants = [v for _, v in g.index]
        g.index = [f"{'bs' if axis == 'batch' else axis} {b:g}\n{v}" for b, v in g.index]
        g.columns = ["busy", "host wait", "kernel wait", "other"]
        g.plot.bar(ax=ax, stacked=True, rot=0, color=IDLE_COLOURS)
        ax.set_ylabel("share of the measured range"); ax.set_ylim(0, 1.02)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0)
        ax.tick_params(axis="x", labelsize=7)
        for tick, v in zip(ax.get_xticklabels(), variants):
            tick.set_color(variant_colour(v))
    style.title(fig, f"GPU time: busy and idle (HTA breakdown){style.at(fixed)}", t, model)
    return fig
