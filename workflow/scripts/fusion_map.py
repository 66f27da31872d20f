"""Snakemake adapter: the fusion-map HTML table from the kernels table (analysis.summary)."""
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # noqa: F821  (the project root)
import pandas as pd

from fusionlab.analysis.summary import fusion_map_html, write_text

write_text(snakemake.output[0], fusion_map_html(pd.read_csv(snakemake.input[0])))  # noqa: F821
