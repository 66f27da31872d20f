"""Attribution of kernel time to module paths, source lines and ops (analysis.run.attribution,
attribution_split, sweep.attribution, runner.op_record): hand-counted synthetic profiles and
graphs, and recorded CPU runs whose attributed rows must sum to their kernels.csv."""
import os

import numpy as np
import pandas as pd
import pytest

from fusionlab.analysis.readers.inductor_logs import Graph, Node
from fusionlab.analysis.readers.trace import KERNEL_COLUMNS, RANGE_COLUMNS, Trace
from fusionlab.analysis.report.figures import attribution_icicle as icicle
from fusionlab.analysis.run import attribution as A
from fusionlab.analysis.run import attribution_split as S
from fusionlab.analysis.sweep import attribution as SW
from fusionlab.core import ranges as R
from fusionlab.runner import inductor_state, op_record

DATA = os.path.join(os.path.dirname(__file__), "data", "attribution_cpu")


def _trace(op_ranges, kernels) -> Trace:
    rng = [(R.MEASURE, R.DOMAIN, 0, 1000, 1), (R.ITERATION, R.DOMAIN, 0, 500, 1),
           (R.ITERATION, R.DOMAIN, 500, 1000, 1), (R.ATTRIBUTE, R.DOMAIN, 2000, 3000, 1)]
    rng += [(n, R.OP_DOMAIN, s, e, t) for n, s, e, t in op_ranges]
    k = pd.DataFrame([(n, s, s + d, t, ls, ls + 5, "cudaLaunchKernel", 7, n) for n, s, d, ls, t in kernels],
                     columns=KERNEL_COLUMNS)
    return Trace("synthetic", "nsys", "cuda", pd.DataFrame(rng, columns=RANGE_COLUMNS), kernels=k)


OPS = [("aten::addmm", 2000, 2100, 1), ("aten::relu", 2100, 2200, 1), ("aten::mm", 2300, 2400, 2)]
RECORD = {"root": "M", "ops": [
    {"op": "aten::addmm", "phase": "forward", "module": "fc", "source": "m.py:3", "seq": 0, "node": None},
    {"op": "aten::relu", "phase": "forward", "module": "act", "source": "m.py:4", "seq": 1, "node": None},
    {"op": "aten::mm", "phase": "backward", "module": "fc", "source": "m.py:3", "seq": 0, "node": "AddmmBackward0"}]}
# (name, start, duration, launch start, tid): gemm 100 ns per iteration, relu 40, copy 10
KERNELS = [("gemm", 20, 100, 10, 1), ("gemm", 520, 100, 510, 1), ("relu", 130, 30, 20, 1), ("relu", 630, 50, 520, 1),
           ("copy", 700, 20, 600, 1),
           ("gemm", 2020, 90, 2010, 1), ("relu", 2120, 40, 2110, 1), ("gemm", 2320, 30, 2310, 2)]


def test_eager_rows_split_each_kernel_by_its_launches_in_the_op_ranges():
    m = A.measured(_trace(OPS, KERNELS))
    assert m.iters == 2 and m.per_iter == pytest.approx({"gemm": 0.1, "relu": 0.04, "copy": 0.01})
    rows = A.eager(m, RECORD)
    got = {(r.module, r.op, r.phase, r.kernel, r.rule): r.time_us for r in rows.itertuples()}
    assert got == pytest.approx({("fc", "aten::addmm", "forward", "gemm", "launch"): 0.075,
                                 ("fc", "aten::mm", "backward", "gemm", "launch"): 0.025,
                                 ("act", "aten::relu", "forward", "relu", "launch"): 0.04,
                                 (A.UNATTRIBUTED, "", "", "copy", "not in op record"): 0.01})
    assert rows["time_us"].sum() == pytest.approx(m.total_us) and rows["share"].sum() == pytest.approx(1.0)
    assert A.coverage(rows) == pytest.approx({"module": 0.14 / 0.15, "source": 0.14 / 0.15, "loop": 0.0})


def test_eager_without_an_op_record_leaves_every_kernel_unattributed():
    rows = A.eager(A.measured(_trace(OPS, KERNELS)), None)
    assert set(rows["rule"]) == {"no op record"} and rows["time_us"].sum() == pytest.approx(0.15)


def test_op_ranges_whose_op_disagrees_with_the_record_are_not_used():
    record = {"ops": [dict(RECORD["ops"][0], op="aten::add"), *RECORD["ops"][1:]]}
    rows = A.eager(A.measured(_trace(OPS, KERNELS)), record)
    lost = rows[rows["rule"] == "outside op ranges"]
    assert lost["time_us"].sum() == pytest.approx(0.075)


def test_a_cpu_op_holding_several_op_ranges_splits_by_overlap():
    launches = pd.DataFrame({"launch_start": [0], "launch_end": [100], "tid": [1], "duration": [100], "name": ["x"]})
    ops = pd.DataFrame({"name": ["a", "b"], "start": [10, 40], "end": [30, 100], "tid": [1, 1]})
    assert A.launch_ops(launches, ops) == [[(0, 0.25), (1, 0.75)]]


def _graphs():
    post = {"a": Node("a", "placeholder", [], "f32", ("4", "8")), "w": Node("w", "placeholder", [], "f32", ("8", "8")),
            "mm": Node("mm", "mm", ["a", "w"], "f32", ("4", "8")),
            "add": Node("add", "add", ["mm", "a"], "f32", ("4", "8")),
            "relu": Node("relu", "relu", ["add"], "f32", ("4", "8"))}
    meta = {"mm": {"seq_nr": 1, "module": "L['self'].fc", "source": "m.py:3"},
            "add": {"seq_nr": 2, "module": "L['self']", "source": "m.py:4"},
            "relu": {"seq_nr": 3, "module": "L['self'].act", "source": "m.py:4"}}
    fwd = Graph("g0", [("extern_kernels.mm:0", ["mm"]), ("triton_poi_fused_add_relu_0:1", ["relu", "add"])],
                post, {}, {}, kind="forward", meta=meta)
    bpost = {"g": Node("g", "placeholder", [], "f32", ("4", "8")), "le": Node("le", "le", ["g"], "b8", ("4", "8"))}
    bwd = Graph("g1", [("triton_poi_fused_le_1:0", ["le"])], bpost, {}, {}, kind="backward",
                meta={"le": {"seq_nr": 3, "backward": True, "module": None, "source": None}}, forward=fwd)
    return [fwd, bwd]


def test_compiled_split_by_unfused_bytes_library_by_flops_and_unmapped_stated():
    per_iter = {"triton_poi_fused_add_relu_0": 10.0, "sm90_xmma_gemm_f32f32": 6.0, "triton_red_fused_sum_9": 1.0,
                "triton_poi_fused_le_1": 2.0}
    rows = A.finish(S.compiled(per_iter, _graphs()), sum(per_iter.values()))
    got = {(r.module, r.source, r.op, r.kernel, r.rule): r.time_us for r in rows.itertuples()}
    # add moves 3 x 128 B unfused, relu 2 x 128 B: 6 and 4 of the fused kernel's 10 us
    assert got == pytest.approx({("", "m.py:4", "aten::add", "triton_poi_fused_add_relu_0", "bytes"): 6.0,
                                 ("act", "m.py:4", "aten::relu", "triton_poi_fused_add_relu_0", "bytes"): 4.0,
                                 ("fc", "m.py:3", "aten::mm", "sm90_xmma_gemm_f32f32", "library"): 6.0,
                                 ("act", "m.py:4", "aten::le", "triton_poi_fused_le_1", "bytes"): 2.0,
                                 (A.UNATTRIBUTED, "", "", "triton_red_fused_sum_9", "no provenance"): 1.0})
    assert rows["time_us"].sum() == pytest.approx(19.0)
    assert S.flops(_graphs()[0], "mm") == 2 * 4 * 8 * 8


@pytest.mark.parametrize("raw, path", [("L['self'].inner.layer[0].fc", "layer.0.fc"),
                                       ("L['self'].encoder.layer.3.attention.self", "encoder.layer.3.attention.self"),
                                       ("L['self']", ""), ("L['self'].blocks['q']", "blocks.q"), (None, None)])
def test_dynamo_module_paths_become_dotted_paths_below_the_model(raw, path):
    assert S.module_path(raw) == path


def test_runner_names_and_frames():
    assert op_record.module_path("AutocastModule.inner.a.b") == ("AutocastModule", "a.b")
    assert op_record.module_path("BertModel.encoder.layer.0") == ("BertModel", "encoder.layer.0")
    assert op_record.module_path("BertModel") == ("BertModel", "")
    trace = '  File "/a/m.py", line 3, in forward\n    x = f(y)\n  File "/a/n.py", line 7, in f\n    return g\n'
    assert inductor_state.innermost_frame(trace) == "/a/n.py:7" and inductor_state.innermost_frame(None) is None
    assert inductor_state.innermost_module({"1": ("L['self'].a", object), "2": ("L['self'].a.b", object)}) == \
        "L['self'].a.b"


def test_op_recorder_records_module_source_and_the_backward_of_each_op():
    torch = pytest.importorskip("torch")
    pytest.importorskip("nvtx")

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(4, 4)

        def forward(self, x):
            return self.fc(x).relu()   # LINE

    net, line = Net(), next(i for i, s in enumerate(open(__file__), 1) if s.rstrip().endswith("# LINE"))
    with op_record.OpRecorder(torch, record_function=False) as rec:
        net(torch.randn(2, 4)).sum().backward()
    ops = rec.record()["ops"]
    fwd = next(o for o in ops if o["op"] == "aten::addmm")
    assert (fwd["module"], fwd["phase"], fwd["source"]) == ("fc", "forward", f"{__file__}:{line}")
    bwd = [o for o in ops if o["op"] == "aten::mm"]
    assert bwd and all(o["phase"] == "backward" and o["module"] == "fc" and o["node"] == "AddmmBackward0"
                       and o["source"] == fwd["source"] for o in bwd)
    relu = next(o for o in ops if o["op"] == "aten::relu")
    assert relu["module"] == ""   # in the model's own forward


@pytest.mark.parametrize("variant", ["eager", "compile"])
def test_recorded_run_rows_sum_to_its_kernel_time(variant):
    d = os.path.join(DATA, variant)
    rows = A.attribute(os.path.join(d, "run.json"), os.path.join(d, "trace.json.gz"))
    kernels = pd.read_csv(os.path.join(d, "kernels.csv"))
    assert rows["time_us"].sum() == pytest.approx(kernels["time_per_iter_us"].sum(), rel=1e-9)
    assert set(rows["rule"]) <= set(A.RULES)
    assert A.coverage(rows)["module"] > 0.85
    assert {"attn", "ff.0", "ff.2", "norm1"} <= set(rows["module"])


def _table():
    rows = []
    for variant, times in (("eager", {"a.x": 10.0, "a.y": 5.0, "b": 3.0, A.UNATTRIBUTED: 1.0}),
                           ("compile", {"a.x": 4.0, "a.y": 6.0, "b": 3.0})):
        for module, t in times.items():
            rows.append({"run": variant, "model": "m", "variant": variant, "batch": 1, "size": "", "mode": "train",
                         "dtype": "float32", "repeat": 0, "backend": "nsys", "device": "cuda", "module": module,
                         "source": "", "op": "", "phase": "", "kernel": "k", "time_us": t, "share": np.nan,
                         "rule": "launch"})
    return pd.DataFrame(rows)


def test_movers_rank_module_changes_against_eager():
    mv = SW.movers(_table(), n=2)
    assert list(zip(mv["module"], mv["delta_us"], mv["rank"])) == [("a.x", -6.0, 1), ("a.y", 1.0, 2)]
    assert SW.movers_sentence(mv) == ("most changed under compile: a.x (-6 us: 10 us -> 4 us), a.y (+1 us: 5 us -> "
                                      "6 us) (kernel time attributed to a module: eager 95%)")   # 18 of 19 us


def test_icicle_tree_and_layout_nest_modules_in_their_parents():
    eager = _table()[lambda t: t["variant"] == "eager"]
    tree = icicle.tree(eager)
    assert tree == {"": 18.0, "a": 15.0, "a.x": 10.0, "a.y": 5.0, "b": 3.0, A.UNATTRIBUTED: 1.0}
    boxes = {p: (d, x, w, label) for p, d, x, w, label in icicle.layout(tree)}
    assert boxes["a.y"] == (2, 10.0, 5.0, "y") and boxes["b"] == (1, 15.0, 3.0, "b")
    assert boxes[A.UNATTRIBUTED] == (0, 18.0, 1.0, A.UNATTRIBUTED) and boxes[""][3] == "(model)"
    fig = icicle.attribution_icicle({"attribution": _table()}, "m")
    assert len(fig.axes) == 3   # two panels and the colour bar


def test_icicle_draws_a_module_holding_only_one_submodule_as_one_box():
    # "" holds only w, w only w.enc (all its time) in both runs: drawn as "w.enc" in row 0
    eager = {"": 10.0, "w": 10.0, "w.enc": 10.0, "w.enc.a": 6.0, "w.enc.b": 4.0}
    variant = {"": 8.0, "w": 8.0, "w.enc": 8.0, "w.enc.a": 8.0}
    merged = icicle.chains(eager, variant)
    assert merged == {"", "w"}   # w.enc has two submodules in eager
    boxes = [(p, row, label) for p, row, _, _, label in icicle.layout(eager, merged=merged)]
    assert boxes == [("w.enc", 0, "w.enc"), ("w.enc.a", 1, "a"), ("w.enc.b", 1, "b")]
    assert icicle.chains(eager, {**variant, "": 9.0}) == {"w"}   # 1 us of the variant's in the model itself
    assert icicle.fits("attention", 0.05, 1.0) and not icicle.fits("attention", 0.04, 1.0)   # 36 pt and 35.4 pt


def test_recorded_nsys_run_measures_the_kernel_tables_time(tmp_path):
    import gzip
    import shutil
    from fusionlab.analysis.readers import nsys_sqlite
    from fusionlab.analysis.run import metrics
    src = os.path.join(os.path.dirname(__file__), "data", "nsys2025_h100_train", "deep_gelu_mlp_eager", "report.sqlite.gz")
    path = str(tmp_path / "report.sqlite")
    with gzip.open(src) as f, open(path, "wb") as out:
        shutil.copyfileobj(f, out)
    m = A.measured(nsys_sqlite.scan(path))
    table = metrics.kernel_table(nsys_sqlite.scan(path))
    assert m.iters == 5 and m.total_us == pytest.approx(table["time_per_iter_us"].sum(), rel=1e-9)
    rows = A.eager(m, None)     # recorded before the op record: every kernel unattributed, none lost
    assert set(rows["rule"]) == {"no op record"} and rows["time_us"].sum() == pytest.approx(m.total_us)


def test_cudnn_layout_kernels_go_to_the_convolution_calls():
    """ViT-B/16's patch embedding compiled on the H100: cuDNN's nchwToNhwc (80 us) and
    nhwcToNchw (9 us) around its convolution were left with no provenance; they are that
    call's, like its GEMM. With no convolution in the graphs they stay unattributed."""
    post = {"x": Node("x", "placeholder", [], "bf16", ("2", "3", "8", "8")),
            "w": Node("w", "placeholder", [], "bf16", ("4", "3", "2", "2")),
            "conv": Node("conv", "convolution", ["x", "w"], "bf16", ("2", "4", "4", "4")),
            "mm": Node("mm", "mm", ["x", "w"], "bf16", ("4", "8"))}
    meta = {"conv": {"seq_nr": 1, "module": "L['self'].patch_embed.proj", "source": "vit.py:9"},
            "mm": {"seq_nr": 2, "module": "L['self'].head", "source": "vit.py:12"}}
    g = Graph("g0", [("extern_kernels.convolution:0", ["conv"]), ("extern_kernels.mm:1", ["mm"])], post, {}, {},
              kind="forward", meta=meta)
    to_nhwc = "void cudnn::engines_precompiled::nchwToNhwcKernel<__nv_bfloat16, __nv_bfloat16, float>(T1)"
    to_nchw = "void cudnn::engines_precompiled::nhwcToNchwKernel<__nv_bfloat16, __nv_bfloat16, float>(T1)"
    rows = A.finish(S.compiled({to_nhwc: 80.0, to_nchw: 9.0}, [g]), 89.0)
    got = {(r.module, r.source, r.op, r.kernel, r.rule): r.time_us for r in rows.itertuples()}
    assert got == pytest.approx({("patch_embed.proj", "vit.py:9", "aten::convolution", to_nhwc, "library"): 80.0,
                                 ("patch_embed.proj", "vit.py:9", "aten::convolution", to_nchw, "library"): 9.0})
    no_conv = Graph("g0", [("extern_kernels.mm:1", ["mm"])], post, {}, {}, kind="forward", meta=meta)
    rows = A.finish(S.compiled({to_nhwc: 80.0}, [no_conv]), 80.0)
    assert rows["rule"].tolist() == ["no provenance"] and rows["module"].tolist() == [A.UNATTRIBUTED]


def test_movers_sentence_names_the_training_loops_share_beside_the_modules():
    t = _table()
    step = t.iloc[[0]].assign(module=A.OPTIMIZER_STEP, time_us=6.0, rule="loop range")   # eager's SGD step, 6 us
    mv = SW.movers(pd.concat([t, step], ignore_index=True), n=1)
    assert "(optimizer step)" not in set(mv["module"])   # the loop's parts are not the model's movers
    # eager: 18 of 25 us on module paths, 6 on the loop
    assert SW.movers_sentence(mv).endswith("(kernel time attributed to a module: eager 72%, its training loop's "
                                           "loss and optimizer step 24%)")
