"""Snakemake adapter: tables/headline.csv from the runs and speedups tables (analysis.sweep.headline)."""
import json

import pandas as pd

from fusionlab.core.joblog import job_log
from fusionlab.analysis.sweep import headline, made_from, tables

i = snakemake.input  # noqa: F821
with job_log(snakemake.log[0]) as log:  # noqa: F821
    peaks = json.load(open(i.peaks)) if i.peaks else None
    h = headline.table(pd.read_csv(i.runs), pd.read_csv(i.speedups), peaks,
                       not_recorded=list(snakemake.params.not_recorded))  # noqa: F821
    tables.write(h, snakemake.output[0])  # noqa: F821
    made_from.record([snakemake.output[0]], [i.runs, i.speedups])  # noqa: F821
    print(f"headline: {len(h)} configurations", file=log)
