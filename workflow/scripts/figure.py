"""Snakemake adapter: one figure, one file per model or for the sweep (analysis.plots)."""
import contextlib  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # noqa: F821  (the project root)
from fusionlab.analysis.report.plots import load_tables, render

i, o = snakemake.input, snakemake.output  # noqa: F821
scopes = [k[:-4] for k in o.keys() if k.endswith("_png")]
with open(snakemake.log[0], "w") as log, contextlib.redirect_stderr(log):  # noqa: F821
    render(snakemake.params.fig, load_tables(i.runs, i.speedups, i.crossover, i.peaks or None, i.scaling,  # noqa: F821
                                             i.kernel_resources),
           {s: (o[f"{s}_png"], o[f"{s}_svg"]) for s in scopes})
    print(f"figure {snakemake.params.fig}: {', '.join(scopes)}", file=log)  # noqa: F821
