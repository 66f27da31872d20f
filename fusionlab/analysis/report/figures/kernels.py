"""Kernel figures: kernels per iteration and the kernel-duration distribution per variant
along the main swept axis."""
from __future__ import annotations

from fusionlab.analysis.report import style
from fusionlab.analysis.report.slicing import by_model, main_axis, ok_runs
from fusionlab.analysis.report.style import variant_colour


def kernels_per_iter(t, model):
    """Kernels per iteration (the speedups table's median), one bar per variant."""
    fig, (ax,) = style.figure()
    d, axis, fixed = main_axis(by_model(t["speedups"], model).dropna(subset=["kernels_per_iter"]))
    d = d.pivot_table(index=axis, columns="variant", values="kernels_per_iter")
    if d.empty:
        style.empty(ax, "no successful runs")
    else:
        d.plot.bar(ax=ax, rot=0, color=[variant_colour(v) for v in d.columns])
        ax.set_xlabel(style.xlabel(axis)); ax.set_ylabel("kernels per iteration"); style.legend(ax)
    what = "CPU kernels (outermost operators)" if set(t["runs"]["device"].dropna()) == {"cpu"} else "GPU kernels"
    style.title(fig, f"{what} per iteration{style.at(fixed)}", t, model)
    return fig


def kernel_durations(t, model):
    """p10, median and p90 kernel duration per variant (medians over the runs)."""
    fig, (ax,) = style.figure()
    d, axis, fixed = main_axis(ok_runs(t, model).dropna(subset=["median_kernel_us"]))
    if d.empty:
        style.empty(ax, "no kernels")
    else:
        for i, (variant, g) in enumerate(d.groupby("variant")):
            g = g.groupby(axis)[["p10_kernel_us", "median_kernel_us", "p90_kernel_us"]].median()
            x = g.index * (1.08 ** i)
            ax.errorbar(x, g["median_kernel_us"], yerr=[g["median_kernel_us"] - g["p10_kernel_us"],
                                                        g["p90_kernel_us"] - g["median_kernel_us"]],
                        marker="o", capsize=3, ls="none", label=variant, color=variant_colour(variant))
        style.log_axis(ax, "x", base=2); style.log_axis(ax, "y")
        style.plain_x_ticks(ax, d[axis].unique())
        style.fit_log_ticks(ax, "y")
        ax.set_xlabel(style.xlabel(axis)); ax.set_ylabel("kernel duration (us): p10, median, p90")
        style.legend(ax)
    style.title(fig, f"Kernel-duration distribution{style.at(fixed)}", t, model)
    return fig
