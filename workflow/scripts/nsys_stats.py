"""Snakemake adapter: `nsys stats` CSVs of one report (analysis.nsys_stats)."""

import contextlib

from fusionlab.analysis.readers.nsys_stats import export_stats

with open(snakemake.log[0], "w") as log, contextlib.redirect_stderr(log):  # noqa: F821
    export_stats(snakemake.input[0], snakemake.output[0])  # noqa: F821
