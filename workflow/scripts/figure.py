"""Snakemake adapter: one figure, one file per model or for the sweep, and its caption
(analysis.report.plots)."""

from fusionlab.core.joblog import job_log
from fusionlab.analysis.report.plots import load_tables, render

i, o = snakemake.input, snakemake.output  # noqa: F821
scopes = [k[:-4] for k in o.keys() if k.endswith("_png")]
with job_log(snakemake.log[0]) as log:  # noqa: F821
    empty = render(snakemake.params.fig,  # noqa: F821
                   load_tables(i.runs, i.speedups, i.crossover, i.peaks or None, i.scaling, i.kernel_resources,
                               i.breakdown, i.headline, i.kernels, i.suite, i.get("gap_ledger"),
                               getattr(i, "attribution", None) or None),
                   {s: (o[f"{s}_png"], o[f"{s}_svg"]) for s in scopes},
                   {s: o[f"{s}_rst"] for s in scopes}, {s: o[f"{s}_data"] for s in scopes})
    print(f"figure {snakemake.params.fig}: {', '.join(scopes)}"  # noqa: F821
          + (f"; nothing to draw for {', '.join(empty)} (a marker written)" if empty else ""), file=log)
