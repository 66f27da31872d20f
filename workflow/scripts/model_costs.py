"""Snakemake adapter: FLOPs and bytes per iteration of each swept model (experiments.cost)."""
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(snakemake.scriptdir).parents[1]))  # noqa: F821  (the project root)
import pandas as pd

from fusionlab.analysis.tables import write
from fusionlab.experiments.cost import table

write(pd.DataFrame(table(snakemake.params.experiments)), snakemake.output[0])  # noqa: F821
