"""Snakemake adapter: a run's measured traffic (analysis.run.traffic) from its ncu.json."""

from fusionlab.core.joblog import job_log
from fusionlab.analysis.run.traffic import main

with job_log(snakemake.log[0]) as log:  # noqa: F821
    row = main(snakemake.input[0], snakemake.output.run, snakemake.output.kernels)  # noqa: F821
    print(f"ncu {row['ncu_status']}: {row.get('ncu_note') or ''}", file=log)
