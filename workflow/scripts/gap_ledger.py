"""Snakemake adapter: tables/gap_ledger.csv (analysis.sweep.gap_ledger)."""

from fusionlab.core.joblog import job_log
from fusionlab.analysis.sweep.gap_ledger import write

i, o = snakemake.input, snakemake.output  # noqa: F821
with job_log(snakemake.log[0]) as log:  # noqa: F821
    print(write(i.metrics, i.headline, i.kernels, o.ledger), file=log)
