"""Snakemake adapter: reproduction.md and its figure (fusionlab.analysis.report.reproduction)."""

from fusionlab.core.joblog import job_log
from fusionlab.analysis.report.reproduction import write

i, o = snakemake.input, snakemake.output  # noqa: F821
with job_log(snakemake.log[0]) as log:  # noqa: F821
    results = write(i.runs, i.speedups, i.costs, i.peaks or None, snakemake.params.runs_root,  # noqa: F821
                    o.md, o.png, o.svg, i.claims[0] if i.claims else None)
    for r in results:
        print(f"{r.claim['id']}: {r.verdict}", file=log)
