"""Snakemake adapter: one figure from the tidy tables (analysis.plots)."""
from analysis.plots import render

render(snakemake.wildcards.fig, snakemake.input.runs, snakemake.input.speedups,  # noqa: F821
       snakemake.output.png, snakemake.output.svg)  # noqa: F821
