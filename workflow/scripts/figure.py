"""Snakemake adapter: one figure from the tidy tables (analysis.plots)."""
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # noqa: F821  (the project root)
from analysis.plots import render

render(snakemake.wildcards.fig, snakemake.input.runs, snakemake.input.speedups,  # noqa: F821
       snakemake.output.png, snakemake.output.svg)  # noqa: F821
