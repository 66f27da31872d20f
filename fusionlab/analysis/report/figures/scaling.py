"""The scaling law t = a + b * size^k (tables/scaling.csv, sweep.scaling) over the runs
it was fitted to."""
from __future__ import annotations

import numpy as np
from matplotlib.ticker import FuncFormatter

from fusionlab.analysis.report import style
from fusionlab.analysis.report.slicing import by_model, ok_runs
from fusionlab.analysis.report.style import variant_colour
from fusionlab.analysis.sweep import scaling as scaling_law
from fusionlab.analysis.sweep import tables

# this module's figures (read as data by the package: no import, no matplotlib); `needs`
# names when the figure has something to draw (figures.NEEDS); the drawing function is
# the figure's name
FIGURES = [
    {
        'name': 'scaling',
        'scope': 'model',
        'category': '8. Scaling',
        'needs': 'swept_3',
        'caption': ("The scaling law t = a + b * size^k of {model}'s untraced wall time and GPU time along "
                    'each axis with 3 or more sizes; k with its 95% CI in the legend.'),
        'shows': ('time per iteration against each swept size, with the fitted law'),
    },
]


METRICS = {"wall": ("wall_time_per_iter_ms", "-", True), "gpu": ("gpu_time_per_iter_ms", "--", False)}


def scaling(t, model):
    """The scaling law per swept axis (rows) and value of the other axes (columns): each
    variant's untraced wall time per iteration (filled dots: median of the repeats, bars:
    their range; solid line: the fit) and its GPU time (hollow dots, dashed fit), log-log."""
    fits = by_model(t["scaling"], model)
    runs = tables.with_size(ok_runs(t, model))
    panels = sorted({(a, f if isinstance(f, str) else "") for a, f in zip(fits["axis"], fits["fixed"])},
                    key=lambda p: (p[0], sorted(tables.parse_fixed_label(p[1]).items()))) if len(fits) else []
    if not panels:
        raise style.NoData("no axis with 3 or more sizes (the scaling law needs 3)")
    axes_swept = list(dict.fromkeys(a for a, _ in panels))
    cols = max([sum(1 for a, _ in panels if a == ax) for ax in axes_swept] or [1])
    fig, grid = style.grid_figure(max(1, len(axes_swept)), cols,
                                  figsize=(max(7.0, 3.4 * cols), 3.2 * max(1, len(axes_swept)) + 0.7))
    for ax in grid.flat:
        ax.set_visible(False)
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
                if r["metric"] not in METRICS:
                    continue
                col_name, ls, filled = METRICS[r["metric"]]
                c = variant_colour(r["variant"])
                mine = d[d["variant"] == r["variant"]]
                for k in varying:                        # e.g. two dtypes in one sweep
                    mine = mine[mine[k] == r[k]]
                g = mine.groupby(axis)[col_name].agg(["median", "min", "max"]).dropna()
                if g.empty:
                    continue
                ax.errorbar(g.index, g["median"], yerr=[g["median"] - g["min"], g["max"] - g["median"]],
                            fmt="o", color=c, ms=4, capsize=2, mfc=c if filled else "white")
                for x, value in g["median"].items():   # each point: the median of its runs' repeats
                    at = mine[mine[axis] == x]
                    keys = {k: at[k].iloc[0] for k in ("model", "variant", "batch", "size", "mode", "dtype", "backend",
                                                        "device") if k in at and at[k].nunique() == 1}
                    style.record(fig, **style.keys_of(keys), mark="point", quantity=f"runs.{col_name}", agg="median",
                                 value=value)
                x = np.geomspace(g.index.min(), g.index.max(), 60)
                fit = {**{k: r[k] for k in ("model", "variant", "mode", "dtype", "axis", "metric") if k in r},
                       "fixed": r["fixed"] if isinstance(r["fixed"], str) else None}
                k_text = style.noted(fig, "2f", r["k"], **fit, mark="legend", quantity="scaling.k")
                ci = f" [{r['k_lo']:.2f}, {r['k_hi']:.2f}]" if r["k_lo"] == r["k_lo"] else ""
                edge = " (k at edge)" if "edge" in str(r.get("note", "")) else ""
                also = "".join(f" {r[k]}" for k in varying)
                ax.plot(x, r["a_ms"] + r["b"] * x ** r["k"], color=c, lw=1.1, ls=ls,
                        label=f"{r['variant']}{also} {r['metric']}: k={k_text}{ci}{edge}")
                if r["metric"] == "wall" and r["fixed_size"] == r["fixed_size"] \
                        and g.index.min() <= r["fixed_size"] <= g.index.max():
                    ax.axvline(r["fixed_size"], color=c, lw=0.8, ls=":")
            style.log_axis(ax, "x", base=2); style.log_axis(ax, "y")
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:g}"))
            style.fit_log_ticks(ax, "y")
            ax.set_xlabel(style.xlabel(axis), fontsize=8)
            ax.set_ylabel("time per iteration (ms)", fontsize=8)
            ax.tick_params(labelsize=7)
            exact = " (3 sizes: exact fit, no CI)" if len(f) and (f["n_sizes"] <= 3).all() else ""
            ax.set_title((fixed or f"along {style.xlabel(axis)}") + exact, fontsize=8)
            style.legend(ax, loc="best", fontsize=6.5)
    style.title(fig, "Scaling law t = a + b * size^k (solid: untraced wall time, dashed: GPU time)", t, model)
    return fig
