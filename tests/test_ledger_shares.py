"""The fusion ledger's eager shares (analysis.run.ledger) on a small graph built here, with
every number worked out by hand from the module's definitions: eager's time of an op shared
equally among the graph's nodes of that op, a node's share among the kernel calls that
compute part of it, and a node a library call computes part of left to that call."""
import math
import os

import pandas as pd
import pytest

from fusionlab.analysis.readers.inductor_logs import Graph, Node
from fusionlab.analysis.run import ledger as L


def graph() -> Graph:
    """x -> linear (mm in a library call, its bias add fused with a gelu) -> relu -> relu_1
    (relu_1 computed in two kernel calls) -> sub, its output."""
    f32 = dict(dtype="f32", shape=(4, 8))
    post = {n.name: n for n in [
        Node("x", "placeholder", [], **f32), Node("w", "placeholder", [], **f32),
        Node("mm", "mm", ["x", "w"], **f32), Node("add", "add", ["mm"], **f32), Node("gelu", "gelu", ["add"], **f32),
        Node("relu", "relu", ["gelu"], **f32), Node("relu_1", "relu", ["relu"], **f32),
        Node("sub", "sub", ["relu_1"], **f32), Node("output", "output", ["sub"])]}
    pre = {n.name: n for n in [Node("linear", "linear", []), Node("gelu", "gelu", []), Node("relu", "relu", []),
                               Node("relu_1", "relu", []), Node("sub", "sub", [])]}
    post_to_pre = {"mm": ["linear"], "add": ["linear"], "gelu": ["gelu"], "relu": ["relu"], "relu_1": ["relu_1"],
                   "sub": ["sub"]}
    calls = [("extern_kernels.mm:0", ["mm"]), ("triton_fused_add_gelu_0:0", ["add", "gelu"]),
             ("triton_relu_1:0", ["relu"]), ("triton_relu_2:0", ["relu_1"]), ("triton_relu_3:0", ["relu_1"]),
             ("triton_sub_4:0", ["sub"])]
    return Graph("g", calls, post, pre, post_to_pre, compile_id="0/0")


# eager's kernels by op (time per iteration, DRAM bytes): sub runs as the add kernel
EAGER = pd.DataFrame([
    {"name": "ampere_sgemm", "full_name": "ampere_sgemm", "ops": "addmm", "time_per_iter_us": 1000.0,
     "dram_bytes": 9000.0},
    {"name": "gelu_kernel", "full_name": "gelu_kernel", "ops": "gelu", "time_per_iter_us": 30.0, "dram_bytes": 300.0},
    {"name": "relu_kernel", "full_name": "relu_kernel", "ops": "relu", "time_per_iter_us": 20.0, "dram_bytes": 200.0},
    {"name": "relu_kernel_b", "full_name": "relu_kernel_b", "ops": "relu", "time_per_iter_us": 4.0,
     "dram_bytes": None},
    {"name": "add_kernel", "full_name": "add_kernel", "ops": "add", "time_per_iter_us": 8.0, "dram_bytes": 80.0},
])
KERNELS = pd.DataFrame([
    {"name": "triton_fused_add_gelu_0", "time_per_iter_us": 12.0, "calls_per_iter": 1, "dram_bytes": 100.0},
    {"name": "graph_1_triton_relu_1", "time_per_iter_us": 5.0, "calls_per_iter": 1, "dram_bytes": 50.0},
    {"name": "triton_relu_2", "time_per_iter_us": 2.0, "calls_per_iter": 1, "dram_bytes": None},
    {"name": "triton_relu_3", "time_per_iter_us": 2.0, "calls_per_iter": 1, "dram_bytes": 10.0},
    {"name": "triton_relu_3", "time_per_iter_us": 1.0, "calls_per_iter": 2, "dram_bytes": 5.0},
    {"name": "triton_sub_4", "time_per_iter_us": 3.0, "calls_per_iter": 1, "dram_bytes": 40.0},
    {"name": "triton_orphan_9", "time_per_iter_us": 7.0, "calls_per_iter": 1, "dram_bytes": None},
])


def test_eager_ops_group_the_eager_kernels_by_op():
    ops = L.eager_ops(EAGER)
    assert ops["relu"] == {"time_us": 24.0, "dram_bytes": 200.0, "kernels": ["relu_kernel", "relu_kernel_b"]}
    assert ops["addmm"]["time_us"] == 1000.0 and ops["add"]["kernels"] == ["add_kernel"]
    assert L.eager_ops(None) == {}


def test_per_kernel_sums_rows_of_a_name():
    k = L._per_kernel(KERNELS)
    assert k["triton_relu_3"]["time_us"] == 3.0 and k["triton_relu_3"]["calls_per_iter"] == 3.0
    assert k["triton_relu_3"]["dram_bytes"] == 15.0
    assert math.isnan(k["triton_relu_2"]["dram_bytes"]) and k["triton_relu_1"]["time_us"] == 5.0   # prefix off
    assert L._per_kernel(None) == {} and L.short("graph_12_triton_x") == "triton_x"


def test_eager_share_splits_an_op_among_its_nodes_and_a_node_among_its_calls():
    share, users = L.eager_share([graph()], L.eager_ops(EAGER))
    assert share["0/pre:relu"] == ("relu", 12.0, 100.0) and share["0/pre:relu_1"] == ("relu", 12.0, 100.0)
    assert share["0/pre:gelu"] == ("gelu", 30.0, 300.0)
    assert share["0/pre:sub"] == ("add", 8.0, 80.0)                # sub ran as the add kernel
    assert share["0/pre:linear"] == ("addmm", 1000.0, 9000.0)
    assert users["0/pre:relu_1"] == 2 and users["0/pre:relu"] == 1
    assert users["0/pre:linear"] == 1                               # the library call's alone


def test_the_ledger_credits_each_kernel_its_share_and_never_a_library_calls():
    df = L.ledger(KERNELS, [graph()], EAGER).set_index("kernel")
    gelu = df.loc["triton_fused_add_gelu_0"]
    # the bias add is the linear's, which the library mm computes: only gelu's 30 us
    assert gelu.eager_time_us == 30.0 and gelu.time_us == 12.0 and gelu.time_saved_us == 18.0
    assert gelu.eager_dram_bytes == 300.0 and gelu.bytes_saved == 200.0
    assert gelu.torch_ops == "gelu+linear" and gelu.aten_ops == "gelu+add" and gelu.fx_nodes == "add+gelu"
    assert gelu.eager_kernels == "gelu: gelu_kernel" and gelu.calls == 1 and gelu.ops_source == "provenance"
    relu = df.loc["triton_relu_1"]
    assert relu.eager_time_us == 12.0 and relu.time_saved_us == 7.0 and relu.eager_dram_bytes == 100.0
    assert relu.eager_kernels == "relu: relu_kernel | relu: relu_kernel_b"
    for k, t in (("triton_relu_2", 2.0), ("triton_relu_3", 3.0)):     # relu_1's 12 us over its two calls
        assert df.loc[k].eager_time_us == 6.0 and df.loc[k].time_saved_us == 6.0 - t
    assert math.isnan(df.loc["triton_relu_2"].bytes_saved) and df.loc["triton_relu_3"].bytes_saved == 50.0 - 15.0
    sub = df.loc["triton_sub_4"]
    assert sub.eager_time_us == 8.0 and sub.eager_kernels == "sub (add kernel): add_kernel"
    orphan = df.loc["triton_orphan_9"]                              # no provenance: by its name only
    assert orphan.ops_source == "name" and math.isnan(orphan.eager_time_us) and pd.isna(orphan.calls)
    assert orphan.name_agrees is None
    # most time saved first, the unmatched last
    assert list(df.index) == ["triton_fused_add_gelu_0", "triton_relu_1", "triton_sub_4", "triton_relu_2",
                              "triton_relu_3", "triton_orphan_9"]


def test_estimated_bytes_from_the_fx_shapes():
    g = graph()
    b = 4 * 4 * 8                                                   # one float32 4x8 tensor
    # add+gelu: reads mm, writes gelu; unfused: add reads mm, writes add; gelu reads add, writes gelu
    assert L._est_bytes(g, {"add", "gelu"}) == (2 * b, 4 * b)
    assert L._est_bytes(g, {"relu"}) == (2 * b, 2 * b)
    assert L._sum([1.0, math.nan, 2.0]) == 3.0 and math.isnan(L._sum([math.nan]))
    df = L.ledger(KERNELS, [g], EAGER).set_index("kernel")
    assert df.loc["triton_fused_add_gelu_0"].est_bytes == 2 * b
    assert df.loc["triton_fused_add_gelu_0"].est_bytes_unfused == 4 * b


def test_without_eager_nothing_is_credited():
    df = L.ledger(KERNELS, [graph()], None)
    assert df["eager_time_us"].isna().all() and df["time_saved_us"].isna().all()


@pytest.mark.parametrize("name,want", [("threshold_backward.default", "threshold_backward"), (None, None)])
def test_aten_names(name, want):
    assert L._aten(name) == want


def test_the_sweep_ledgers_helpers():
    from fusionlab.analysis.sweep import ledger as S
    assert S._bandwidth({"copy_bandwidth_Bps": 2e12}) == (2e12, "measured copy bandwidth")
    assert S._bandwidth({"copy_bandwidth_Bps": 0}) == (None, "none") and S._bandwidth(None) == (None, "none")
    assert S._key({"a": 1, "b": None}, ["a", "b", "c"]) == ("1", "None", "None")
    assert [S._text(x) for x in (None, float("nan"), "None", "<NA>", 3, "x")] == ["nan"] * 4 + ["3", "x"]
    k = pd.DataFrame({"model": ["m", "m", "n"], "batch": [8, 16, 8], "dim": [None, None, 4], "name": ["a", "b", "c"]})
    assert S._lookup(k, {"model": "m", "batch": "8", "dim": float("nan")}, ["model", "batch", "dim"])["name"].tolist() \
        == ["a"]
    assert S._lookup(k, {"model": "m"}, ["model"])["name"].tolist() == ["a", "b"]
    assert S._lookup(k.iloc[:0], {"model": "m"}, ["model"]).empty
    assert "variant" not in S.CONFIG and "repeat" not in S.CONFIG and "model" in S.CONFIG


def test_the_sweep_ledger_writes_both_tables_with_their_columns(tmp_path):
    from fusionlab.analysis.sweep import ledger as S
    from fusionlab.analysis.sweep.tables import ID
    lg, ms = tmp_path / "fusion_ledger.csv", tmp_path / "missed_fusions.csv"
    (tmp_path / "peaks.json").write_text('{"copy_bandwidth_Bps": 1e12}')
    S.write([], str(tmp_path / "no_kernels.csv"), str(tmp_path / "peaks.json"), str(lg), str(ms))
    assert pd.read_csv(lg).columns.tolist() == ID + L.LEDGER_COLUMNS
    assert pd.read_csv(ms).columns.tolist() == ID + L.MISSED_COLUMNS + ["bandwidth_source"]
    (tmp_path / "empty.csv").write_text("")
    S.write([], str(tmp_path / "empty.csv"), None, str(lg), str(ms))
    assert pd.read_csv(lg).empty


def test_the_sweep_ledger_takes_each_configurations_first_ok_repeat_and_its_eager(tmp_path):
    """Recorded CPU runs (tests/data/ledger_cpu) copied as repeats: compile's repeat 0 failed,
    1 and 2 ran; eager's repeats 0 and 1 ran, 1 ten times slower. The ledger is repeat 1's,
    matched with eager's repeat 1; dynamo's graph-break reason (run.json) is a row."""
    import json
    import shutil
    from fusionlab.analysis.sweep import ledger as S
    from fusionlab.analysis.sweep.tables import kernels_table
    data = os.path.join(os.path.dirname(__file__), "data", "ledger_cpu")

    def copy(src, name, repeat, status="ok", slower=1.0, reasons=None):
        d = tmp_path / name
        shutil.copytree(os.path.join(data, src), d)
        m = json.loads((d / "metrics.json").read_text())
        (d / "metrics.json").write_text(json.dumps({**m, "repeat": repeat, "status": status}))
        r = json.loads((d / "run.json").read_text())
        if reasons is not None:
            r["compile"]["graph_break_reasons"] = reasons
        (d / "run.json").write_text(json.dumps({**r, "repeat": repeat, "status": status}))
        k = pd.read_csv(d / "kernels.csv")
        k["time_per_iter_us"] *= slower
        k.to_csv(d / "kernels.csv", index=False)
        return str(d / "metrics.json")
    files = [copy("mlp_compile", "c0", 0, status="oom"), copy("mlp_compile", "c1", 1, reasons=["a reason"]),
             copy("mlp_compile", "c2", 2), copy("mlp_eager", "e0", 0), copy("mlp_eager", "e1", 1, slower=10.0),
             copy("transformer_block_compile", "t0", 0)]
    kernels = kernels_table([(m, m.replace("metrics.json", "kernels.csv")) for m in files])
    lg, ms = S.build(files, kernels)
    mlp = lg[lg["model"] == "mlp"]
    assert set(mlp["repeat"]) == {1} and set(lg[lg["model"] == "transformer_block"]["repeat"]) == {0}
    assert list(lg.index) == list(range(len(lg))) and list(ms.index) == list(range(len(ms)))
    only_e0, _ = S.build([files[1], files[3]], kernels)
    assert mlp["eager_time_us"].sum() == pytest.approx(10 * only_e0["eager_time_us"].sum())
    assert mlp["eager_time_us"].sum() > 0
    breaks = ms[ms["kind"] == "graph break"]
    assert breaks["reason"].tolist() == ["a reason"] and set(ms["bandwidth_source"]) == {"none"}
