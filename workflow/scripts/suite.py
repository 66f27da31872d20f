"""Snakemake adapter: tables/suite.csv, kernel_classes.csv and slower.csv (analysis.sweep.suite)."""

from fusionlab.core.joblog import job_log
from fusionlab.analysis.sweep.suite import write

i, o = snakemake.input, snakemake.output  # noqa: F821
with job_log(snakemake.log[0]) as log:  # noqa: F821
    print(write(i.headline, i.kernels, o.suite, o.kernel_classes, o.slower), file=log)
