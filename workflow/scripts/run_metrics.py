"""Snakemake adapter: metrics.json of one run (analysis.run.run_metrics)."""
import sys  # noqa: E402

from fusionlab.core.joblog import job_log
from fusionlab.analysis.run.run_metrics import main
from fusionlab.plan import progress

with job_log(snakemake.log[0]) as log:  # noqa: F821
    row = main(snakemake.input.run, getattr(snakemake.input, "profile", None),  # noqa: F821
               snakemake.wildcards.backend, snakemake.output.metrics,  # noqa: F821
               snakemake.output.kernels,  # noqa: F821
               timing_json=getattr(snakemake.input, "timing", None))  # noqa: F821
    print(f"{row['status']}: {row.get('reason') or ''}", file=log)
try:
    print(progress.line(snakemake.params.results), file=sys.stderr)  # noqa: F821  (on the terminal)
except progress.PlanError as e:   # the run's metrics are written: a plan that cannot be read only says so
    print(f"fusionlab progress: {e}", file=sys.stderr)
