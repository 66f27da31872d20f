"""Snakemake adapter: tidy tables of the sweep (analysis.tables)."""
from analysis import tables

o = snakemake.output  # noqa: F821
runs = tables.runs_table(list(snakemake.input))  # noqa: F821
tables.write(runs, o.runs, o.runs_pq)
tables.write(tables.long_table(runs), o.long, o.long_pq)
tables.write(tables.speedups(runs), o.speedups)
