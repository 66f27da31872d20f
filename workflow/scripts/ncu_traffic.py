"""Snakemake adapter: a run's measured traffic (analysis.run.traffic) from its ncu.json."""
import contextlib  # noqa: E402

from fusionlab.analysis.run.traffic import main

with open(snakemake.log[0], "w") as log, contextlib.redirect_stderr(log):  # noqa: F821
    row = main(snakemake.input[0], snakemake.output.run, snakemake.output.kernels)  # noqa: F821
    print(f"ncu {row['ncu_status']}: {row.get('ncu_note') or ''}", file=log)
