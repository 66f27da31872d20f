"""Snakemake adapter: tables/fusion_ledger.csv and tables/missed_fusions.csv
(analysis.sweep.ledger)."""

from fusionlab.core.joblog import job_log
from fusionlab.analysis.sweep.ledger import write

i, o = snakemake.input, snakemake.output  # noqa: F821
with job_log(snakemake.log[0]) as log:  # noqa: F821
    write(i.metrics, i.kernels, i.peaks or None, o.ledger, o.missed)
    print(f"fusion ledger of {len(i.metrics)} runs: {o.ledger}, {o.missed}", file=log)
