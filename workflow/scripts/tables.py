"""Snakemake adapter: the tidy tables of the sweep (analysis.sweep.build)."""

from fusionlab.core.joblog import job_log
from fusionlab.analysis.sweep.build import build

i = snakemake.input  # noqa: F821
with job_log(snakemake.log[0]) as log:  # noqa: F821
    build(i.metrics, i.kernels, i.costs, i.peaks or None, dict(snakemake.output.items()),  # noqa: F821
          noise_cv=snakemake.params.noise_cv, ncu_note=snakemake.params.ncu_note)  # noqa: F821
    print(f"tables of {len(i.metrics)} runs: {', '.join(snakemake.output)}", file=log)  # noqa: F821
