"""Snakemake adapter: the tidy tables of the sweep (analysis.sweep.build)."""
import contextlib  # noqa: E402

from fusionlab.analysis.sweep.build import build

i = snakemake.input  # noqa: F821
with open(snakemake.log[0], "w") as log, contextlib.redirect_stderr(log):  # noqa: F821
    build(i.metrics, i.kernels, i.costs, i.peaks or None, dict(snakemake.output.items()),  # noqa: F821
          noise_cv=snakemake.params.noise_cv, ncu_note=snakemake.params.ncu_note)  # noqa: F821
    print(f"tables of {len(i.metrics)} runs: {', '.join(snakemake.output)}", file=log)  # noqa: F821
