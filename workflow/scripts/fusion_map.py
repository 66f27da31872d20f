"""Snakemake adapter: the fusion map page (analysis.report.fusion_map) from the kernels
table, the fusion ledger and the missed fusions."""

import pandas as pd

from fusionlab.core.joblog import job_log
from fusionlab.analysis.report.fusion_map import page
from fusionlab.analysis.report.summary import write_text


def _read(path):
    try:
        return pd.read_csv(path)
    except (pd.errors.EmptyDataError, FileNotFoundError):
        return None


i = snakemake.input  # noqa: F821
with job_log(snakemake.log[0]) as log:  # noqa: F821
    kernels = pd.read_csv(i.kernels)
    write_text(snakemake.output[0], page(kernels, _read(i.ledger), _read(i.missed)))  # noqa: F821
    print(f"fusion map of {len(kernels)} kernel rows: {snakemake.output[0]}", file=log)  # noqa: F821
