"""Snakemake adapter: the fusion-map HTML table from the kernels table (analysis.summary)."""
import contextlib  # noqa: E402

import pandas as pd

from fusionlab.analysis.report.summary import fusion_map_html, write_text

with open(snakemake.log[0], "w") as log, contextlib.redirect_stderr(log):  # noqa: F821
    kernels = pd.read_csv(snakemake.input[0])  # noqa: F821
    write_text(snakemake.output[0], fusion_map_html(kernels))  # noqa: F821
    print(f"fusion map of {len(kernels)} kernel rows: {snakemake.output[0]}", file=log)  # noqa: F821
