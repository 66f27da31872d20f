"""The fusion ledger on recorded compile artifacts (tests/data/ledger_cpu, record.sh there):
Inductor's provenance and fusion log as the runner keeps them, the ledger and missed
fusions, the sweep tables, the fusion map page and the summary section."""
import glob
import json
import math
import os
import re

import pandas as pd
import pytest

from conftest import lowered
from fusionlab.analysis.readers import inductor_logs, nsys_sqlite
from fusionlab.analysis.report import fusion_map
from fusionlab.analysis.report.summary import ledger_md
from fusionlab.analysis.run import fusion, ledger, metrics
from fusionlab.analysis.sweep import ledger as sweep_ledger
from fusionlab.analysis.sweep.tables import ID, kernels_table

DATA = os.path.join(os.path.dirname(__file__), "data", "ledger_cpu")


def run(name):
    d = os.path.join(DATA, name)
    return (inductor_logs.read(os.path.join(d, "inductor")), pd.read_csv(os.path.join(d, "kernels.csv")),
            json.load(open(os.path.join(d, "run.json"))))


def shape_bytes(graph_py, node):
    """Bytes of one node's output, read from its line in the post-grad graph."""
    line = next(ln for ln in open(graph_py) if re.match(rf"\s*{node}: ", ln))
    dims = re.search(r'"f32\[([^\]]*)\]', line).group(1)
    return 4 * math.prod(int(x) for x in dims.split(","))


def test_reader_mlp():
    graphs, kernels, rec = run("mlp_compile")
    assert rec["inductor_logs"]["provenance_graphs"] == 1 and rec["compile"]["fx_graph_cache_misses"] == 1
    (g,) = graphs
    assert g.compile_id == "0/0"
    assert [inductor_logs.kernel_of(c) for c, _ in g.calls] == [
        "extern_kernels.addmm", "cpp_fused_relu_0", "extern_kernels.addmm", "cpp_fused_relu_0", "extern_kernels.addmm"]
    assert {g.post[n].op for _, nodes in g.calls for n in nodes} == {"addmm", "relu"}
    assert {n.op for n in g.pre.values()} >= {"matmul", "add", "relu"}    # x @ w + b, torch.relu
    (log,) = g.fusion
    assert log.found and set(log.found) == {0} and len(log.externs) == 3   # "found 0 possible fusions"
    # kernels.csv took its ops from that provenance (run_metrics reads inductor/ by default)
    relu = kernels[kernels["name"].str.contains("cpp_fused_relu")].iloc[0]
    assert relu["ops_source"] == "provenance" and relu["fx_nodes"] == "relu+relu_1"


def test_cache_hit_keeps_provenance_without_fusion_log():
    graphs, kernels, rec = run("mlp_compile_cached")
    assert rec["compile"]["fx_graph_cache_hits"] == 1 and rec["inductor_logs"]["fusion_log_lines"] == 0
    (g,) = graphs
    assert len(g.calls) == 5 and not g.fusion and g.pre          # pre-grad ops from dynamo's graph
    lg = ledger.ledger(kernels, graphs, pd.read_csv(os.path.join(DATA, "mlp_eager", "kernels.csv")))
    assert list(lg["kernel"]) == ["cpp_fused_relu_0"] and lg["torch_ops"].item() == "relu"
    ms = ledger.missed(kernels, graphs, None)
    assert set(ms["reason_source"]) == {"rule"}            # every pair has an extern side


def test_ledger_mlp_matches_eager_relu():
    graphs, kernels, _ = run("mlp_compile")
    eager = pd.read_csv(os.path.join(DATA, "mlp_eager", "kernels.csv"))
    lg = ledger.ledger(kernels, graphs, eager)
    row = lg.set_index("kernel").loc["cpp_fused_relu_0"]
    assert row["calls"] == 2 and row["aten_ops"] == "relu" and row["name_agrees"]
    assert row["eager_kernels"] == "relu: aten::relu"
    assert row["eager_time_us"] == pytest.approx(eager.set_index("name").loc["aten::relu", "time_per_iter_us"])
    fused = kernels[kernels["name"].str.contains("cpp_fused_relu")]["time_per_iter_us"].sum()
    assert row["time_us"] == pytest.approx(fused)
    assert row["time_saved_us"] == pytest.approx(row["eager_time_us"] - fused)
    assert math.isnan(row["dram_bytes"])                     # no Nsight Compute on the CPU
    post = os.path.join(DATA, "mlp_compile", "inductor", "graph_0", "fx_graph_transformed.py")
    # relu reads addmm's output and writes its own, twice
    assert row["est_bytes"] == 2 * (shape_bytes(post, "addmm_default_2") + shape_bytes(post, "relu"))


def test_missed_mlp_every_matmul_apart_from_its_epilogue():
    graphs, kernels, _ = run("mlp_compile")
    ms = ledger.missed(kernels, graphs, 1e10)
    assert len(ms) == 4 and set(ms["kind"]) == {"left apart"}
    assert set(ms["chain"]) == {"0/0#1"}                       # mm -> relu -> mm -> relu -> mm: one chain
    assert all("extern" in r for r in ms["reason"])
    post = os.path.join(DATA, "mlp_compile", "inductor", "graph_0", "fx_graph_transformed.py")
    first = ms[ms["buffers"] == "addmm_default_2"].iloc[0]
    assert first["buffer_bytes"] == shape_bytes(post, "addmm_default_2")
    assert first["time_cost_us"] == pytest.approx(2 * first["buffer_bytes"] / 1e10 * 1e6)


def test_transformer_block_reasons_and_names():
    graphs, kernels, _ = run("transformer_block_compile")
    eager = pd.read_csv(os.path.join(DATA, "transformer_block_eager", "kernels.csv"))
    lg = ledger.ledger(kernels, graphs, eager).set_index("kernel")
    ln = lg.loc["cpp_fused_add_native_layer_norm_view_1"]
    assert "layer_norm" in ln["torch_ops"] and "var_mean" in ln["aten_ops"]
    assert "layer_norm: aten::layer_norm" in ln["eager_kernels"] and "add: aten::add" in ln["eager_kernels"]
    sdpa = lg.loc[[k for k in lg.index if "scaled_dot_product" in k][0]]
    assert not sdpa["name_agrees"] and sdpa["name_only_ops"]     # the name lists ops it does not compute
    ms = ledger.missed(kernels, graphs, None)
    logged = ms[ms["reason_source"] == "fusion log"]
    assert "intermediate nodes between node1 & node2" in set(logged["reason"])
    log = open(os.path.join(DATA, "transformer_block_compile", "inductor", "fusion.log")).read()
    assert all(f"{r}" in log for r in logged["reason"] if not r.startswith("no reason"))


def test_sweep_tables_and_page():
    files = sorted(m for m in glob.glob(f"{DATA}/*/metrics.json") if "cached" not in m)
    kernels = kernels_table([(m, m.replace("metrics.json", "kernels.csv")) for m in files])
    lg, ms = sweep_ledger.build(files, kernels, {"copy_bandwidth_Bps": 2e10})
    assert set(lg["model"]) == {"mlp", "transformer_block"} and set(lg["variant"]) == {"compile"}
    assert list(lg.columns[:len(ID)]) == ID
    assert set(ms["bandwidth_source"]) == {"measured copy bandwidth"}
    ok = ms[ms["kind"] == "left apart"]
    assert (ok["time_cost_us"] == 2 * ok["buffer_bytes"] / 2e10 * 1e6).all()
    page = fusion_map.page(kernels, lg, ms)
    assert "title='graph_0_cpp_fused_relu_0'" in page and "relu: <span title='aten::relu'>" in page
    assert "intermediate nodes between node1 &amp; node2" in page
    md = "\n".join(ledger_md(lg, ms))
    assert "## The fusion ledger" in md and "cpp_fused_relu_0" in md and "<library call>" in md
    assert ledger_md(None, None) == []
    # two models: each model's own top rows, even where the sweep's top ten are all one model's
    per_model = md.split("saved each model the most eager time (3 each):")[1].split("\n\n")[1]
    rows = [r.split(" | ")[0].strip("| ") for r in per_model.splitlines()[2:]]
    want = lg.groupby("model").size().clip(upper=3)
    assert rows == sorted(rows) and {m: rows.count(m) for m in set(rows)} == want.to_dict()
    one = "\n".join(ledger_md(lg[lg["model"] == "mlp"], ms[ms["model"] == "mlp"]))
    assert "each model the most" not in one


def test_gpu_kernels_without_provenance(report):
    """Triton kernels (nsys2025_h200): the name-parsing fallback of the page, eager's add
    kernel labelled as add or sub, and a ledger over no graphs is empty."""
    frames = []
    for v in ("eager", "compile"):
        k = fusion.annotate(metrics.kernel_table(nsys_sqlite.load(report(f"nsys2025_h200/pointwise_heavy_{v}"))))
        for c, val in zip(ID, ["pointwise_heavy", v, 128, "default", "inference", "float32", 0, "nsys", "cuda"]):
            k[c] = val
        frames.append(k)
    k = pd.concat(frames, ignore_index=True)
    page = fusion_map.page(k)
    assert "No provenance kept" in page and "triton_" in page
    assert "add or sub (add kernel)" in page
    assert ">sin_kernel_cuda in vectorized_elementwise_kernel<" in page      # named by what it computes
    long = [n for n in k["full_name"] if len(n) > fusion_map.NAME_WIDTH][0]
    assert f"title='{long}'" in page.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&") \
        .replace("&#x27;", "'").replace("&quot;", '"')
    eager = k[k["variant"] == "eager"]
    ops = ledger.eager_ops(eager)
    assert "add" in ops and ops["add"]["time_us"] > 0
    assert ledger.ledger(k[k["variant"] == "compile"], [], eager).empty


def test_compile_logs_in_process(tmp_path):
    """runner.introspect.CompileLogs on a small compile: provenance, graphs and the fusion
    log kept; torch's settings as they were afterwards."""
    import torch
    from torch._inductor import config

    from fusionlab.runner import introspect
    before = config.trace.provenance_tracking_level

    def f(x):
        return torch.relu(x - 1.0) * 2.0

    torch._dynamo.reset()
    with lowered(), introspect.CompileLogs(torch, str(tmp_path / "inductor")) as logs:
        torch.compile(f)(torch.randn(64))            # cold: a cache hit has no fusion log
    assert config.trace.provenance_tracking_level == before
    assert logs.summary()["provenance_graphs"] == 1
    (g,) = inductor_logs.read(str(tmp_path / "inductor"))
    gen = [c for c, _ in g.calls if ledger.generated(c)]
    assert len(gen) == 1 and {g.post[n].op for n in g.calls[0][1]} == {"sub", "relu", "mul"}
    assert {"sub", "relu", "mul"} <= {n.op for n in g.pre.values()}


def test_a_cache_hit_keeps_the_cold_compiles_fusion_log(tmp_path, monkeypatch):
    """The run's untraced process compiles cold, its profiled one finds the graph in the
    cache (no fusion log, nothing lowered) and writes into the same folder: what the cold
    compile wrote stays."""
    import torch
    from torch._inductor import config

    from fusionlab.runner import introspect
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "cache"))

    def f(x):
        return torch.relu(x - 1.0) * 2.0

    folder = str(tmp_path / "inductor")
    lines = []
    for _ in range(2):
        torch._dynamo.reset()
        with config.patch(fx_graph_cache=True), introspect.CompileLogs(torch, folder) as logs:
            torch.compile(f)(torch.randn(64))
        lines.append(logs.summary()["fusion_log_lines"])
    assert lines[0] > 0 and lines[1] == 0        # cold, then a cache hit
    (g,) = inductor_logs.read(folder)
    assert g.fusion and os.path.exists(os.path.join(folder, "graph_0", "scheduler_bytes.json"))


def test_compile_logs_graph_break(tmp_path):
    """A graph break: two graphs under two compile ids, each with its own fusion log and
    provenance; the break's reason is a missed-fusions row."""
    import torch

    from fusionlab.runner import introspect

    def f(x):
        y = torch.sin(x) * 2.0
        torch._dynamo.graph_break()
        return torch.cos(y) + 1.0

    torch._dynamo.reset()
    introspect.reset_compile_counters(torch)
    with lowered(), introspect.CompileLogs(torch, str(tmp_path / "inductor")):
        torch.compile(f)(torch.randn(64))
    info = introspect.compile_introspection(torch)
    graphs = inductor_logs.read(str(tmp_path / "inductor"))
    assert [g.compile_id for g in graphs] == ["0/0", "1/0"] and all(g.fusion for g in graphs)
    ops = [{g.post[n].op for _, nodes in g.calls for n in nodes} for g in graphs]
    assert ops == [{"sin", "mul"}, {"cos", "add"}]
    ms = ledger.missed(pd.DataFrame(columns=["name"]), graphs, None, info["graph_break_reasons"])
    assert list(ms["kind"]) == ["graph break"] and info["graph_breaks"] == 1
    brk = ms.iloc[0]
    assert brk["graph"] == "0/0 -> 1/0" and brk["reason"] == info["graph_break_reasons"][0]
    assert "sin" in brk["producer"] and "cos" in brk["consumer"]


def test_a_kernel_in_an_anonymous_namespace_reads_as_its_function():
    """The CUDA-graph input copy of a max-autotune run on the H100, as nsys demangles it."""
    from fusionlab.analysis.report.fusion_map import display
    full = ("void at::native::<unnamed>::multi_tensor_apply_kernel<at::native::<unnamed>::TensorListMetadata<(int)2>, "
            "at::native::<unnamed>::UnaryOpFunctor<float, (int)2, (int)1, (int)1>, at::native::Copy<float, float>>"
            "(T1, T2, T3...)")
    assert display(full) == "UnaryOpFunctor in multi_tensor_apply_kernel"
    assert display(full.replace("<unnamed>", "(anonymous namespace)")) == display(full)
