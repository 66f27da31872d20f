"""Snakemake adapter: tidy tables of the sweep (analysis.tables)."""
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # noqa: F821  (the project root)
from analysis import tables

o = snakemake.output  # noqa: F821
runs = tables.runs_table(list(snakemake.input))  # noqa: F821
tables.write(runs, o.runs, o.runs_pq)
tables.write(tables.long_table(runs), o.long, o.long_pq)
tables.write(tables.speedups(runs), o.speedups)
