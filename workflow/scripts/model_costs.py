"""Snakemake adapter: FLOPs and bytes per iteration of each swept model (experiments.cost)."""

import pandas as pd

from fusionlab.core.joblog import job_log
from fusionlab.analysis.sweep.tables import write
from fusionlab.experiments.cost import table

with job_log(snakemake.log[0]) as log:  # noqa: F821
    costs = pd.DataFrame(table(snakemake.params.experiments, snakemake.params.imports,  # noqa: F821
                                snakemake.params.recorded))  # noqa: F821
    write(costs, snakemake.output[0])  # noqa: F821
    print(f"costs of {len(costs)} experiments: {snakemake.output[0]}", file=log)  # noqa: F821
