"""Attribution of a compiled run's library kernels by the order the kernels ran, of nodes an
Inductor pass made by their kernel call's other nodes (analysis.run.attribution_split), the
graph caches the profiled process turns off (runner.introspect), and the recorded H100
sweep of BERT-base and GPT-2 (tests/data/attribution_h100: sums, coverage, the repeat kept,
the module paths that change most, the icicle's marks against the table)."""
import os
import sys
import types

import pandas as pd
import pytest

from fusionlab.analysis.readers.inductor_logs import Graph, Node
from fusionlab.analysis.report import audit_figures, style
from fusionlab.analysis.report.figures import attribution_icicle as icicle
from fusionlab.analysis.run import attribution as A
from fusionlab.analysis.run import attribution_split as S
from fusionlab.analysis.sweep import attribution as SW
from fusionlab.runner import introspect

H100 = os.path.join(os.path.dirname(__file__), "data", "attribution_h100")
GEMM32, GEMM16 = "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n", "nvjet_sm90_tst_192x128_h_bz_bias_TNT"
CAST, SOFTMAX = "triton_poi_fused__to_copy_1", "triton_per_fused__safe_softmax_2"


def _attention_graph(layers=2) -> Graph:
    """Per layer: dense addmm (bf16), cast, q @ k bmm (fp32), softmax, p @ v bmm (fp32);
    one cast and one softmax kernel shared by every layer (Inductor reuses a kernel)."""
    f = ("f32", ("16", "512", "512"))
    post, meta, calls = {}, {}, []
    for i in range(layers):
        post.update({f"x{i}": Node(f"x{i}", "placeholder", [], "bf16", ("8192", "768")),
                     f"addmm{i}": Node(f"addmm{i}", "addmm", [f"x{i}", f"x{i}", f"x{i}"], "bf16", ("8192", "768")),
                     f"cast{i}": Node(f"cast{i}", "convert_element_type", [f"addmm{i}"], *f),
                     f"bmm{i}": Node(f"bmm{i}", "bmm", [f"cast{i}", f"cast{i}"], *f),
                     f"sm{i}": Node(f"sm{i}", "_safe_softmax", [f"bmm{i}"], *f),
                     f"exp{i}": Node(f"exp{i}", "exp", [f"bmm{i}"], *f),
                     f"pv{i}": Node(f"pv{i}", "bmm", [f"sm{i}", f"cast{i}"], *f)})
        here = {"module": f"L['self'].layer[{i}].attention.self", "source": "bert.py:158"}
        meta.update({f"addmm{i}": {"module": f"L['self'].layer[{i}].dense", "source": "bert.py:335"},
                     f"cast{i}": here, f"bmm{i}": here, f"sm{i}": here, f"pv{i}": here,
                     f"exp{i}": {"module": None, "source": None}})   # made by a post-grad pass
        calls += [(f"extern_kernels.addmm:{5 * i}", [f"addmm{i}"]), (f"{CAST}:{5 * i + 1}", [f"cast{i}"]),
                  (f"extern_kernels.bmm:{5 * i + 2}", [f"bmm{i}"]), (f"{SOFTMAX}:{5 * i + 3}", [f"sm{i}", f"exp{i}"]),
                  (f"extern_kernels.bmm:{5 * i + 4}", [f"pv{i}"])]
    return Graph("g0", calls, post, {}, {}, kind="inference", meta=meta)


def _launches(names, durations) -> pd.DataFrame:
    return pd.DataFrame({"launch_start": range(len(names)), "launch_end": range(len(names)), "tid": 1,
                         "duration": durations, "name": names})


def _by(rows, *keys) -> dict:
    return A.finish(rows, 1.0).groupby(list(keys))["time_us"].sum().to_dict()


def test_library_kernels_go_to_the_calls_between_the_generated_kernels_around_them():
    seq = [GEMM16, CAST, GEMM32, SOFTMAX, GEMM32] * 2
    launches = _launches(seq, [10, 2, 30, 5, 10, 12, 2, 30, 5, 10])
    per_iter = {GEMM16: 22.0, CAST: 4.0, GEMM32: 80.0, SOFTMAX: 10.0}
    rows = S.compiled(per_iter, [_attention_graph()], launches)
    got = _by(rows, "module", "kernel", "rule")
    # the fp32 GEMM's 80 us: all to the attention's bmm calls, 30:10 by each launch's duration
    assert got[("layer.0.attention.self", GEMM32, "sequence")] == pytest.approx(40.0)
    assert got[("layer.1.attention.self", GEMM32, "sequence")] == pytest.approx(40.0)
    assert got[("layer.0.dense", GEMM16, "sequence")] == pytest.approx(10.0)    # 22 us as 10 : 12
    assert got[("layer.1.dense", GEMM16, "sequence")] == pytest.approx(12.0)
    assert not any(k[1] == GEMM32 and "dense" in k[0] for k in got)
    # the softmax kernel's exp node has no meta: its share goes where the kernel's other node is
    exp = _by([r for r in rows if r["op"] == "aten::exp"], "module", "rule")
    assert set(exp) == {("layer.0.attention.self", "inherited"), ("layer.1.attention.self", "inherited")}
    assert sum(r["time_us"] for r in rows) == pytest.approx(sum(per_iter.values()))


def test_without_the_order_library_kernels_are_pooled_by_flops():
    rows = S.compiled({GEMM32: 80.0}, [_attention_graph()], None)
    got = _by(rows, "module", "rule")
    # addmm 2*8192*768*768 FLOPs against 2 bmm of 2*16*512*512*512 each: the dense layers take most
    dense, attn = 2 * 8192 * 768 * 768, 2 * 2 * 16 * 512 ** 3
    assert got[("layer.0.dense", "library")] == pytest.approx(80.0 / 2 * dense / (dense + attn))
    assert got[("layer.0.attention.self", "library")] == pytest.approx(80.0 / 2 * attn / (dense + attn))


def test_a_launch_no_call_of_its_class_takes_is_pooled():
    # one fp32 GEMM launch too many between the cast and the softmax: the segment's GEMM
    # count differs from its calls' (2 against 1), but the one call there takes both
    seq = [GEMM16, CAST, GEMM32, GEMM32, SOFTMAX, GEMM32]
    placed, anchors = S.sequence([_attention_graph(1)], _launches(seq, [1] * 6))
    assert sorted(placed) == [0, 2, 3, 5] and anchors == {1: 1, 4: 3}
    assert [placed[j][1] for j in (0, 2, 3, 5)] == [["addmm0"], ["bmm0"], ["bmm0"], ["pv0"]]
    # an elementwise library kernel where no call of its class ran: left to the pool
    placed, _ = S.sequence([_attention_graph(1)], _launches([GEMM16, "vectorized_elementwise_kernel", CAST], [1] * 3))
    assert sorted(placed) == [0]


def test_the_profiled_process_turns_the_graph_caches_off_and_back(monkeypatch):
    inductor, functorch = types.SimpleNamespace(fx_graph_cache=True), types.SimpleNamespace(enable_autograd_cache=True)
    monkeypatch.setitem(sys.modules, "torch._inductor.config", inductor)
    monkeypatch.setitem(sys.modules, "torch._functorch.config", functorch)
    saved = introspect.caches_off()
    assert inductor.fx_graph_cache is False and functorch.enable_autograd_cache is False
    assert [(name, value) for _, name, value in saved] == [("fx_graph_cache", True), ("enable_autograd_cache", True)]


def _recorded():
    return pd.read_csv(os.path.join(H100, "table.csv.gz"), keep_default_na=False, na_values={"time_us": [""]})


def test_recorded_h100_rows_sum_to_the_measured_kernel_time():
    t, runs = _recorded(), pd.read_csv(os.path.join(H100, "runs.csv"))
    sums = t.groupby("run")["time_us"].sum()
    for r in runs.itertuples():
        assert sums[r.run] == pytest.approx(r.kernels_csv_us, rel=1e-9) == pytest.approx(r.metrics_us, rel=1e-9)


def test_recorded_h100_coverage_and_the_repeat_kept():
    t = _recorded()
    cov = SW.coverage(t).set_index("run")
    bert = "nsys/bert/compile/inference_bfloat16/bs16-seq512/r"
    # r0's graph came from Inductor's cache (no node meta: nothing attributed); r1 compiled
    # it and left 569.5 us of the online-softmax pass's nodes without a module
    assert cov.loc[bert + "0", "module_share"] == 0.0
    assert cov.loc[bert + "1", "module_share"] == pytest.approx(1 - 569.4698 / 9977.2031, abs=1e-6)
    assert (cov.loc[[r for r in cov.index if "/eager/" in r], ["module_share", "source_share"]] == 1.0).all().all()
    kept = SW.chosen(t)
    assert sorted(kept.loc[kept["model"] == "bert", "run"].unique()) == [bert + "1", bert.replace("compile", "eager") + "0"]


def test_recorded_h100_module_paths_that_change_most():
    mv = SW.movers(_recorded(), folded=True)
    gpt2 = mv[mv["model"] == "gpt2"]
    assert list(gpt2["module"]) == ["model.lm_head", "model.transformer.h.*.mlp.act", "model.transformer.h.*.attn"]
    assert list(gpt2["eager_us"].round(1)) == [3364.7, 1701.1, 221.5]
    assert list(gpt2["variant_us"].round(1)) == [544.5, 194.4, 440.3]
    bert = mv[mv["model"] == "bert"]
    assert bert["module"].iloc[0] == "model.encoder.layer.*.attention.self" and (bert["variant"] == "compile").all()
    assert SW.fold("encoder.layer.10.attention.self") == "encoder.layer.*.attention.self"
    assert SW.fold(A.UNATTRIBUTED) == A.UNATTRIBUTED and SW.fold("h.0") == "h.*" and SW.fold("fc10.w2") == "fc10.w2"


class _Audit:
    def __init__(self):
        self.violations = []

    def check(self, ok, where, what):
        if not ok:
            self.violations.append((where, what))


def test_recorded_h100_icicle_totals_are_audited_against_the_table():
    t = _recorded()
    fig = icicle.attribution_icicle({"attribution": t}, "bert")
    marks = pd.DataFrame(style.marks(fig))
    assert list(marks["text"]) == ["3.86 ms", "9.98 ms"] and list(marks["repeat"]) == [0, 1]
    tables = {"attribution": t}
    a = _Audit()
    audit_figures.check_marks(a, marks, tables, None, "bert")
    assert a.violations == []
    audit_figures.check_marks(a, marks.assign(value=marks["value"] * 1.01), tables, None, "bert")
    assert len(a.violations) == 4   # each total against the table and its label
    style.plt.close(fig)
