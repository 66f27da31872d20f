"""A size axis joins the run and kernel tables as a column of its own name: one named as a
column those tables already hold (kernels' `ops`) is refused when the sweep is configured,
and the list of those names covers every column of the recorded tables."""
import glob
import os

import pandas as pd
import pytest

from conftest import ROOT
from fusionlab.analysis.sweep import tables
from fusionlab.core import sizes
from fusionlab.plan import sweep


def recorded_columns() -> set:
    """The columns of the recorded run and kernel tables under tests/data, their size axes left out."""
    cols = set()
    for f in glob.glob(os.path.join(ROOT, "tests", "data", "**", "runs.csv"), recursive=True):
        r = pd.read_csv(f)
        cols |= set(r.columns) - set(tables.size_axes(r))
    for f in glob.glob(os.path.join(ROOT, "tests", "data", "**", "kernels.csv"), recursive=True):
        cols |= set(pd.read_csv(f, nrows=1).columns)
    from fusionlab.experiments import catalog
    return {c for c in cols if sizes.NAME.match(c)} - set(catalog.size_axes())   # an axis: letters and underscores


def test_every_recorded_table_column_an_axis_could_be_named_is_listed():
    cols = recorded_columns()
    assert len(cols) > 100 and {"ops", "kernels", "name", "status", "calls"} <= cols
    assert cols <= sizes.TABLE_COLUMNS, sorted(cols - sizes.TABLE_COLUMNS)


def test_no_catalog_axis_is_a_table_column():
    from fusionlab.experiments import catalog
    assert not set(catalog.size_axes()) & sizes.TABLE_COLUMNS


@pytest.mark.parametrize("axis, refused", [("steps", False), ("ops", True)])
def test_a_swept_axis_named_as_a_table_column_is_refused(tmp_path, axis, refused):
    (tmp_path / "m.py").write_text(
        "import torch\n"
        f"def build(batch, dtype, device, {axis}=3):\n"
        "    return torch.nn.Linear(4, 4).to(device=device, dtype=dtype), (torch.randn(batch, 4, device=device, dtype=dtype),)\n")
    name = f"axis_{axis}_model"      # one name per case: an imported model stays in this process's catalog
    cfg = {"models": [name], "variants": ["eager"], "batch_sizes": [8],
           "import_models": {name: f"{tmp_path}/m.py:build"}, "sizes": {name: {axis: [2]}}}
    if refused:
        with pytest.raises(sweep.ConfigError, match=f"size axis '{axis}' is also the name of a column"):
            sweep.validate(cfg, root=ROOT)
    else:
        assert sweep.validate(cfg, root=ROOT)["sizes"][name] == {axis: [2]}
