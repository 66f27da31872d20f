"""Snakemake adapter: one figure, one file per model or for the sweep (analysis.plots)."""
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # noqa: F821  (the project root)
from fusionlab.analysis.plots import load_tables, render

i, o = snakemake.input, snakemake.output  # noqa: F821
scopes = [k[:-4] for k in o.keys() if k.endswith("_png")]
render(snakemake.params.fig, load_tables(i.runs, i.speedups, i.crossover, i.peaks or None),  # noqa: F821
       {s: (o[f"{s}_png"], o[f"{s}_svg"]) for s in scopes})
