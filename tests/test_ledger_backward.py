"""The ledger's backward kernels and Inductor's byte estimate, on recorded train-mode runs
(tests/data/ledger_cpu/mlp_train_*, record.sh there) and on small compiles in process:
the backward's kernel -> post-grad mapping Inductor writes while CompileLogs is open, the
node meta that ties backward nodes to forward ops, and the scheduler's bytes per kernel."""
import json
import math
import os

import pandas as pd
import pytest

from conftest import lowered
from fusionlab.analysis.readers import inductor_logs
from fusionlab.analysis.run import kernel_bytes, ledger, provenance

DATA = os.path.join(os.path.dirname(__file__), "data", "ledger_cpu")


def run(name):
    d = os.path.join(DATA, name)
    return (inductor_logs.read(os.path.join(d, "inductor")), pd.read_csv(os.path.join(d, "kernels.csv")),
            json.load(open(os.path.join(d, "run.json"))))


def eager(name):
    return pd.read_csv(os.path.join(DATA, name, "kernels.csv"))


def test_train_backward_has_provenance():
    graphs, kernels, rec = run("mlp_train_compile")
    assert rec["inductor_logs"]["provenance_graphs"] == 2
    fwd, bwd = graphs
    assert (fwd.kind, bwd.kind) == ("forward", "backward") and bwd.forward is fwd
    assert fwd.compile_id == bwd.compile_id == "0/0"
    gen = [c for c, _ in bwd.calls if ledger.generated(c)]
    assert gen and all(c.startswith("cpp_fused_") for c in gen)
    # kernels.csv took the backward kernels' ops from it too
    thr = kernels[kernels["name"].str.endswith("cpp_fused_threshold_backward_2")].iloc[0]
    assert thr["ops_source"] == "provenance" and set(thr["ops"].split("+")) == {"full", "le", "where"}
    lg = ledger.ledger(kernels, graphs, eager("mlp_train_eager")).set_index("kernel")
    assert set(lg["ops_source"]) == {"provenance"}
    assert set(lg["graph_kind"]) == {"forward", "backward"}
    row = lg.loc["cpp_fused_threshold_backward_2"]
    assert row["graph_kind"] == "backward" and row["grad_of"] == "relu"
    assert row["torch_ops"] == "threshold_backward"          # the aten op autograd ran (original_aten)
    assert "ReluBackward0" in row["eager_kernels"]          # eager's CPU profile: the autograd node
    relu_bw = eager("mlp_train_eager").set_index("name").loc["ReluBackward0", "time_per_iter_us"]
    assert row["eager_time_us"] == pytest.approx(relu_bw / 2)   # one of two relu backwards
    both = lg.loc["cpp_fused_sum_threshold_backward_1"]
    assert set(both["grad_of"].split("+")) == {"add", "relu"}       # bias grad of one add, relu grad of the next
    assert lg.loc["cpp_fused_relu_0", "grad_of"] == ""


def test_train_backward_from_cache():
    """A backward from Inductor's cache carries the mapping Inductor cached with it, but no
    node meta or scheduler estimate (nothing was lowered in the run)."""
    graphs, kernels, rec = run("mlp_train_compile_cached")
    assert rec["compile"]["fx_graph_cache_hits"] == 2
    fwd, bwd = graphs
    assert bwd.kind == "backward" and bwd.calls and not bwd.meta and bwd.scheduler is None
    lg = ledger.ledger(kernels, graphs, eager("mlp_train_eager")).set_index("kernel")
    row = lg.loc["cpp_fused_threshold_backward_2"]
    assert row["ops_source"] == "provenance" and row["grad_of"] == ""
    assert set(row["torch_ops"].split("+")) == {"full", "le", "where"}   # its post-grad aten ops: no original_aten
    assert math.isnan(row["inductor_bytes"]) and row["inductor_bytes_source"] == kernel_bytes.FROM_CACHE


def test_kernels_without_mapping_are_name_rows():
    """Generated kernels no graph's mapping lists (a backward compiled without the mapping)
    are ledger rows with ops from their names, said as such."""
    graphs, kernels, _ = run("mlp_train_compile")
    graphs[1].calls = []
    lg = ledger.ledger(kernels, graphs, None).set_index("kernel")
    row = lg.loc["cpp_fused_threshold_backward_2"]
    assert row["ops_source"] == "name" and row["ops_by_name"] == "threshold_backward"
    assert row["name_agrees"] is None and row["inductor_bytes_source"] == "no provenance"
    assert lg.loc["cpp_fused_relu_0", "ops_source"] == "provenance"
    assert ledger.ledger(kernels, [], None).empty                     # no provenance at all: no ledger


def test_inductor_bytes_mlp():
    graphs, kernels, _ = run("mlp_compile")
    (g,) = graphs
    sched = json.load(open(os.path.join(DATA, "mlp_compile", "inductor", "graph_0", "scheduler_bytes.json")))
    relu = sum(s["bytes"] for s in sched if s["kind"] == "SchedulerNode" and set(s["origins"]) <= {"relu", "relu_1"})
    lg = ledger.ledger(kernels, graphs, None).set_index("kernel")
    row = lg.loc["cpp_fused_relu_0"]
    assert row["inductor_bytes"] == relu and row["inductor_bytes_source"] == kernel_bytes.SOURCE
    assert row["inductor_bytes"] == row["est_bytes"]        # a relu: its input and output, twice
    # hand counts (batch 4, hidden 1024, fp32): two relus, each reads and writes 4 x 1024
    # floats; the middle addmm reads x, w2 and b2 and writes its output
    B, H, f = 4, 1024, 4
    assert row["inductor_bytes"] == 2 * 2 * B * H * f
    mm = next(s["bytes"] for s in sched if "addmm_default_1" in s["origins"])
    assert mm == (B * H + H * H + H + B * H) * f
    calls = kernel_bytes.call_bytes(g)
    externs = [i for i, (c, _) in enumerate(g.calls) if not ledger.generated(c)]
    assert set(calls) == set(range(len(g.calls))) and all(calls[i] > 0 for i in externs)


def test_inductor_bytes_every_generated_kernel():
    for name in ("transformer_block_compile", "mlp_train_compile"):
        graphs, kernels, _ = run(name)
        lg = ledger.ledger(kernels, graphs, None)
        assert (lg["inductor_bytes_source"] == kernel_bytes.SOURCE).all(), name
        assert (lg["inductor_bytes"] > 0).all()
    graphs, kernels, _ = run("mlp_compile_cached")
    lg = ledger.ledger(kernels, graphs, None)
    assert lg["inductor_bytes"].isna().all() and set(lg["inductor_bytes_source"]) == {kernel_bytes.FROM_CACHE}


def test_compile_logs_backward_in_process(tmp_path):
    """CompileLogs over two train-mode compiles in one process: each backward's mapping
    holds its own kernels only, with node meta and scheduler estimates; torch's provenance
    state as it was afterwards."""
    import torch
    from torch._inductor import debug as inductor_debug

    from fusionlab.runner import introspect

    def f(x, w):
        return torch.relu(x @ w) * 2.0

    before = inductor_debug._pre_grad_graph_id
    torch._dynamo.reset()
    with lowered(), introspect.CompileLogs(torch, str(tmp_path / "inductor")) as logs:
        for shape in (8, 16):
            torch._dynamo.reset()
            x, w = torch.randn(4, shape), torch.randn(shape, shape, requires_grad=True)
            torch.compile(f)(x, w).mean().backward()
    assert inductor_debug._pre_grad_graph_id == before
    assert logs.summary()["provenance_graphs"] == 4
    graphs = inductor_logs.read(str(tmp_path / "inductor"))
    assert [g.kind for g in graphs] == ["forward", "backward"] * 2
    b1, b2 = graphs[1], graphs[3]
    assert b1.calls and len(b1.calls) == len(b2.calls)          # the second holds its own kernels only
    assert all(n in b2.post for _, nodes in b2.calls for n in nodes)
    assert any(m["backward"] and m["original_aten"].startswith("threshold_backward") for m in b1.meta.values())
    assert b1.scheduler and all(s["bytes"] is not None for s in b1.scheduler)
    lg = ledger.ledger(pd.DataFrame(columns=["name"]), graphs[:2], None)
    bw = lg[lg["graph_kind"] == "backward"].iloc[0]
    assert "relu" in bw["grad_of"] and bw["inductor_bytes_source"] == kernel_bytes.SOURCE
    # kernels.csv's ops come from the same mapping
    m = provenance.kernel_ops(str(tmp_path / "inductor"))
    assert any("threshold_backward" in k for k in m)


def test_page_and_summary_show_backward_rows():
    from fusionlab.analysis.report import fusion_map
    from fusionlab.analysis.report.summary import ledger_md
    from fusionlab.analysis.sweep import ledger as sweep_ledger
    from fusionlab.analysis.sweep.tables import kernels_table
    files = [os.path.join(DATA, r, "metrics.json") for r in ("mlp_train_eager", "mlp_train_compile")]
    kernels = kernels_table([(m, m.replace("metrics.json", "kernels.csv")) for m in files])
    lg, ms = sweep_ledger.build(files, kernels, None)
    assert set(lg["graph_kind"]) == {"forward", "backward"} and set(lg["mode"]) == {"train"}
    assert {"grad_of", "ops_source", "inductor_bytes", "inductor_bytes_source"} <= set(lg.columns)
    page = fusion_map.page(kernels, lg, ms)
    assert "gradient of: relu" in page and "Inductor's estimate" in page
    assert "threshold_backward" in "\n".join(ledger_md(lg, ms))
