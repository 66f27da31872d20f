"""Compile cost as the Inductor harness defines it (the speedups table): compilation
latency and peak-memory compression ratio per model and variant."""
from __future__ import annotations

from fusionlab.analysis.report import style
from fusionlab.analysis.report.grid import MAX_BARS, grid, grid_size
from fusionlab.analysis.report.style import variant_colour, variant_order

TITLE = "Compile cost (Inductor harness definitions)"


def compile_cost(t, model):
    """Compilation latency (median of cold compiles) and peak-memory compression ratio
    (eager / variant) per model and variant: bars, or a grid for a large sweep."""
    s = t["speedups"]
    s = s[(s["variant"] != "eager") & (s["status"] == "ok")]
    d = s.groupby(["model", "variant"])[["compilation_latency_s", "compression_ratio"]].median()
    if len(d) > MAX_BARS:
        w, h = grid_size(d.index.get_level_values(0).nunique(), d.index.get_level_values(1).nunique())
        fig, (ax, bx) = style.figure(2, w=w, h=h)
        rows = list(dict.fromkeys(d.index.get_level_values(0)))
        cols = variant_order(d.index.get_level_values(1))
        grid(ax, d["compilation_latency_s"].dropna(), ".2f", "compilation latency (s), cold compiles' median",
             cmap="YlOrRd", rows=rows, cols=cols)
        grid(bx, d["compression_ratio"].dropna(), ".2f", "eager peak memory / variant peak memory "
             "(red: the variant uses less)", centre=1.0, rows=rows, cols=cols)
        style.title(fig, TITLE, t, model)
        return fig
    fig, (ax, bx) = style.figure(2, w=max(5.5, 1.0 + 0.45 * len(d)))
    if d.dropna(how="all").empty:
        style.empty(ax, "no compiled variant ran"); style.empty(bx, "")
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
    style.title(fig, TITLE, t, model)
    return fig
