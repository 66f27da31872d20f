"""Snakemake adapter: `nsys stats` CSVs of one report (analysis.readers.nsys_stats)."""


from fusionlab.core.joblog import job_log
from fusionlab.analysis.readers.nsys_stats import export_stats

with job_log(snakemake.log[0]) as log:  # noqa: F821
    export_stats(snakemake.input[0], snakemake.output[0])  # noqa: F821
