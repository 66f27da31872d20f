"""Snakemake adapter: tables/fusion_ledger.csv and tables/missed_fusions.csv
(analysis.sweep.ledger)."""
import contextlib  # noqa: E402

from fusionlab.analysis.sweep.ledger import write

i, o = snakemake.input, snakemake.output  # noqa: F821
with open(snakemake.log[0], "w") as log, contextlib.redirect_stderr(log):  # noqa: F821
    write(i.metrics, i.kernels, i.peaks or None, o.ledger, o.missed)
    print(f"fusion ledger of {len(i.metrics)} runs: {o.ledger}, {o.missed}", file=log)
