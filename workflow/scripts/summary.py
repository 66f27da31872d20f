"""Snakemake adapter: summary.md from the tidy tables (analysis.summary)."""
import contextlib  # noqa: E402

from fusionlab.analysis.report.plots import load_tables
from fusionlab.analysis.report.summary import summary_md, write_text

i = snakemake.input  # noqa: F821
with open(snakemake.log[0], "w") as log, contextlib.redirect_stderr(log):  # noqa: F821
    t = load_tables(i.runs, i.speedups, i.crossover, i.peaks or None, i.scaling, i.kernel_resources)
    write_text(snakemake.output[0], summary_md(t["runs"], t["speedups"], t["crossover"], t["peaks"],  # noqa: F821
                                               scaling=t["scaling"], kernel_resources=t["kernel_resources"]))
    print(f"summary of {len(t['runs'])} runs: {snakemake.output[0]}", file=log)  # noqa: F821
