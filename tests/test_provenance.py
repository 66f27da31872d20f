"""The fusion map from Inductor's provenance output (analysis.run.provenance), on the debug
files torch 2.13 wrote for a small compiled function on the CPU (tests/data/provenance),
and the fallback to kernel names where a run has none."""
import os

import pandas as pd

from fusionlab.analysis.run import fusion, provenance

DATA = os.path.join(os.path.dirname(__file__), "data", "provenance", "torch2.13-cpu")
KERNEL = "cpp_fused_add_mul_relu_sin_sum_0"   # relu(sin(x) * 2 + 1).sum(1)


def test_kernel_to_fx_nodes_and_aten_ops():
    m = provenance.kernel_ops(DATA)
    assert m == {KERNEL: {"nodes": ["sin", "mul", "add", "relu", "sum_1"],
                          "ops": ["sin", "mul", "add", "relu", "sum"]}}


def test_annotate_says_which_source_was_used():
    k = fusion.annotate(pd.DataFrame({"name": [KERNEL, "aten::mm", "triton_poi_fused_add_relu_0"]}))
    a = provenance.annotate(k, provenance.kernel_ops(DATA)).set_index("name")
    assert a.loc[KERNEL, "ops_source"] == "provenance"
    assert a.loc[KERNEL, "ops"] == "sin+mul+add+relu+sum" and a.loc[KERNEL, "n_ops"] == 5
    assert a.loc[KERNEL, "fx_nodes"] == "sin+mul+add+relu+sum_1"
    assert a.loc["triton_poi_fused_add_relu_0", "ops_source"] == "name"     # not in the mapping
    assert a.loc["triton_poi_fused_add_relu_0", "ops"] == "add+relu"
    assert a.loc["aten::mm", "ops_source"] == "name"


def test_no_debug_folder_falls_back_to_names(tmp_path):
    assert provenance.kernel_ops(None) == {} and provenance.kernel_ops(str(tmp_path)) == {}
    k = provenance.annotate(fusion.annotate(pd.DataFrame({"name": [KERNEL]})), {})
    assert list(k["ops_source"]) == ["name"] and list(k["ops"]) == ["add+mul+relu+sin+sum"]
