"""Snakemake adapter: FLOPs and bytes per iteration of each swept model (experiments.cost)."""
import contextlib  # noqa: E402

import pandas as pd

from fusionlab.analysis.sweep.tables import write
from fusionlab.experiments.cost import table

with open(snakemake.log[0], "w") as log, contextlib.redirect_stderr(log):  # noqa: F821
    costs = pd.DataFrame(table(snakemake.params.experiments))  # noqa: F821
    write(costs, snakemake.output[0])  # noqa: F821
    print(f"costs of {len(costs)} experiments: {snakemake.output[0]}", file=log)  # noqa: F821
