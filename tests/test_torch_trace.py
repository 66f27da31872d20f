"""The torch.profiler backend on real CPU traces recorded by the pipeline."""
import json
import os

import pytest

from fusionlab.analysis.run import metrics
from fusionlab.analysis.readers import torch_trace
from fusionlab.analysis.readers.trace import ReportError
from conftest import DATA


def load(name):
    return torch_trace.load(os.path.join(DATA, "torch_cpu", name, "trace.json"))


def test_pointwise_eager_cpu_kernels():
    t = load("pointwise_heavy_eager")
    assert t.device == "cpu" and t.backend == "torch"
    m = metrics.range_metrics(t, "measure")
    assert m["iterations"] == 5
    assert m["kernels_per_iter"] == 35.0          # the same 35 ops as the GPU's 35 kernels
    assert m["gpu_time_per_iter_ms"] is None and m["launch_overhead_ratio"] is None


def test_mlp_compile_shows_inductor_cpp_kernels():
    t = load("mlp_compile")
    m = metrics.range_metrics(t, "measure")
    names = set(t.kernels["name"])
    assert any(n.startswith("graph_0_cpp_fused") or "cpp_fused" in n for n in names)
    assert m["kernels_per_iter"] == 5.0           # 3 addmm + 2 fused relu


def test_wall_time_matches_record_function_range():
    t = load("mlp_compile")
    doc = json.load(open(os.path.join(DATA, "torch_cpu", "mlp_compile", "trace.json")))
    ev = [e for e in doc["traceEvents"] if e.get("name") == "fusionlab:measure"]
    m = metrics.range_metrics(t, "measure")
    assert m["duration_ms"] == pytest.approx(ev[0]["dur"] / 1e3, abs=1e-6)


def test_not_a_trace(tmp_path):
    p = tmp_path / "x.json"; p.write_text("{not json")
    with pytest.raises(ReportError) as e:
        torch_trace.load(str(p))
    assert str(p) in str(e.value) and "\n" not in str(e.value)
