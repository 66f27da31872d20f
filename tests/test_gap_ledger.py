"""The gap ledger (analysis.sweep.gap_ledger, gap_host) on the H100 real-network tables, on
BERT and GPT-2 recorded on one H100 with their dynamo records (tests/data/gap_ledger_h100)
and on a dynamo record made by hand: the terms add up to the gap, the host terms count
only the exposed host time, each term is its record's number computed by hand, the
sentence names the top term and what pulls against it, the audits (report.audit_gap,
audit_figures on the waterfall) pass the written ledger and find an edited one; the
runner's dynamo record (runner.dynamo_record) from snapshots written by hand; and, in the
slow tier, Dynamo's own counters for the known-cause cases of examples/slow_compile on
the CPU."""
import gzip
import json
import math
import os
import sys

import pandas as pd
import pytest

from fusionlab.analysis.report import audit_figures, audit_gap
from fusionlab.analysis.report.audit import Audit
from fusionlab.analysis.sweep import gap_host, gap_ledger, tables
from fusionlab.runner import dynamo_record
from conftest import ROOT

DATA = f"{ROOT}/tests/data/real_models_h100"
GATE = f"{ROOT}/tests/data/gap_ledger_h100"
CASES = f"{ROOT}/examples/slow_compile"


@pytest.fixture(scope="module")
def recorded():
    h, k = pd.read_csv(f"{DATA}/headline.csv"), pd.read_csv(f"{DATA}/kernels.csv")
    return h, k, gap_ledger.build(h, k, {})


def test_terms_add_up_to_the_headline_gap(recorded):
    h, k, led = recorded
    total = led[led["term"] == "total"]
    assert len(total) == 4    # gpt2 and resnet50, inference and train, compile against eager
    for _, t in total.iterrows():
        g = led[(led["model"] == t["model"]) & (led["mode"] == t["mode"]) & (led["variant"] == t["variant"])]
        assert g[g["term"] != "total"]["ms"].sum() == pytest.approx(t["ms"], abs=1e-12)
        r = h[(h["model"] == t["model"]) & (h["mode"] == t["mode"]) & (h["variant"] == "compile")].iloc[0]
        assert t["ms"] == pytest.approx(r["wall_ms"] - r["eager_wall_ms"], abs=1e-12)
        assert t["gap_lo_ms"] <= t["ms"] <= t["gap_hi_ms"]


def test_gpu_terms_add_up_to_the_kernels_tables_difference(recorded):
    _, k, led = recorded
    one = led[(led["model"] == "gpt2") & (led["mode"] == "inference")].set_index("term")["ms"]
    sel = k[(k["model"] == "gpt2") & (k["mode"] == "inference")]
    by_hand = (sel[sel["variant"] == "compile"]["time_per_iter_us"].sum()
               - sel[sel["variant"] == "eager"]["time_per_iter_us"].sum()) / 1e3
    assert one[["fused", "library", "kept", "added"]].sum() == pytest.approx(by_hand, abs=1e-9)
    # the cuBLAS GEMM (Kernel2) eager ran and compile replaced: in `library`, by name
    lib = led[(led["model"] == "gpt2") & (led["mode"] == "inference") & (led["term"] == "library")]
    assert "gone: Kernel2" in lib["detail"].iloc[0] and "nvjet_sm90" in lib["detail"].iloc[0]


def test_ranks_and_sentence_name_the_top_term(recorded):
    _, _, led = recorded
    g = led[(led["model"] == "resnet50") & (led["mode"] == "inference")]
    ranked = g[g["rank"].notna()].sort_values("rank")
    assert ranked["term"].iloc[0] == "fused" and (ranked["ms"] < 0).all()
    term, ms, text = gap_ledger.top_cause(led, g[g["term"] == "total"].iloc[0].to_dict())
    assert (term, ms) == ("fused", ranked["ms"].iloc[0])
    assert text.startswith("2.23x, -4.43 ms per iteration (interval -4.7 ms to -4.16 ms): generated kernels vs the "
                           "eager kernels they replaced")
    assert "-2.8 ms" in text and text.endswith("residual +185 us.")


DYN = {"total": {"graph_breaks": 1, "graph_break_sites": [{"function": "forward", "line": 24, "count": 1,
                                                            "file": "/x/graph_break.py"}],
                 "graph_break_reasons": [{"reason": "Unsupported Tensor.item() call", "count": 1}],
                 "recompiles": 3, "recompile_limit_hits": 1, "cudagraph_skips": 0,
                 "recompile_guards": {"forward (/x/m.py:1)": "0/2: self.step == 2  # self.step += 1"}},
       "windows": {"recompiles": 0}, "windows_compile_us_per_iter": 40.0,
       "guards": {"frames": [{"code": "forward (/x/m.py:1)", "entry": 0, "entries": 1, "lookup_us": 2.0},
                             {"code": "torch_dynamo_resume_in_forward_at_24 (/x/m.py:24)", "entry": 0,
                              "entries": 1, "lookup_us": 3.0}],
                  "missed_lookup_us_per_iter": 7.0, "graph_calls_per_iter": 2, "graph_host_us_per_iter": 100.0}}


def test_host_terms_from_a_dynamo_record_by_hand():
    v, e = {"launches_per_iter": 10}, {"launches_per_iter": 8, "host_per_launch_us": 5.0}
    t = gap_host.host_terms(v, e, DYN, reduce_overhead=False)   # no exposed host time measured: counted whole
    assert t["launches"][0] == pytest.approx(2 * 5.0 / 1e3)
    # each graph's wrapper: (100 us in the graphs - 10 launches x 5 us) / 2 graphs = 25 us
    assert t["wrapper"][0] == pytest.approx(25.0 / 1e3)
    assert t["guards"][0] == pytest.approx(2.0 / 1e3)
    assert t["graph_breaks"][0] == pytest.approx((3.0 + 25.0) / 1e3)   # the resumed frame's lookup and wrapper
    assert "graph_break.py:24" in t["graph_breaks"][1] and "Tensor.item()" in t["graph_breaks"][1]
    assert t["recompiles"][0] == pytest.approx((40.0 + 7.0) / 1e3)
    assert "recompile limit hit 1x" in t["recompiles"][1] and "self.step == 2" in t["recompiles"][1]
    assert "exposure not measured" in t["wrapper"][1]


def test_host_terms_count_only_the_exposed_host_time():
    """The host costs of DYN: launches 10 x 5 = 50 us, wrapper (100 - 50) / 2 = 25, guards 2,
    graph breaks 3 + 25 = 28, recompiles 40 + 7 = 47: 152 us. Eager exposed 40 us."""
    e = {"launches_per_iter": 8, "host_per_launch_us": 5.0, "host_ms": 0.040}
    # host-bound: 200 us exposed, more than the costs; each counts whole, 48 us left to the residual
    t = gap_host.host_terms({"launches_per_iter": 10, "host_ms": 0.200}, e, DYN, reduce_overhead=False)
    assert t["wrapper"][0] == pytest.approx(0.025) and t["launches"][0] == pytest.approx(0.010)
    assert sum(ms for ms, _ in t.values()) == pytest.approx(0.152 - 0.040)
    assert "100% exposed" in t["wrapper"][1]
    # 76 us exposed: half of each cost; the host terms add up to the exposed time less eager's
    t = gap_host.host_terms({"launches_per_iter": 10, "host_ms": 0.076}, e, DYN, reduce_overhead=False)
    assert t["wrapper"][0] == pytest.approx(0.0125) and t["guards"][0] == pytest.approx(0.001)
    assert t["graph_breaks"][0] == pytest.approx(0.014) and t["recompiles"][0] == pytest.approx(0.0235)
    assert t["launches"][0] == pytest.approx(0.025 - 0.040)
    assert sum(ms for ms, _ in t.values()) == pytest.approx(0.076 - 0.040)
    assert "50% exposed" in t["wrapper"][1] and "host costs 152 us, its exposed host time 76 us" in t["launches"][1]
    # GPU-bound: nothing exposed, every cost hidden behind kernels; eager's exposed time is saved
    t = gap_host.host_terms({"launches_per_iter": 10, "host_ms": 0.0}, e, DYN, reduce_overhead=False)
    assert {n: ms for n, (ms, _) in t.items()} == {"launches": -0.040, "guards": 0.0, "wrapper": 0.0,
                                                   "graph_breaks": 0.0, "recompiles": 0.0}


def test_an_inference_calls_host_time_around_its_graphs_joins_wrapper_or_graph_breaks():
    """Inference with the call's host time recorded: what lies outside the graphs and the
    cache lookups is Dynamo's frame and the compiled frame's code (in `wrapper`), or with a
    graph break the eager code between the graphs (in `graph_breaks`); so the host costs add
    up to the call's host time. One graph of 60 us, 10 launches x 5 us, a 2 us lookup, a
    100 us call: wrapper 60 - 50 = 10 us plus 100 - 60 - 2 = 38 us around it."""
    e = {"launches_per_iter": 8, "host_per_launch_us": 5.0, "host_ms": 0.040}
    one = {"total": {"graph_breaks": 0}, "windows_compile_us_per_iter": 0.0,
           "guards": {"frames": [{"code": "forward (/x/m.py:1)", "entry": 0, "entries": 1, "lookup_us": 2.0}],
                      "missed_lookup_us_per_iter": 0.0, "graph_calls_per_iter": 1, "graph_host_us_per_iter": 60.0,
                      "iteration_host_us_per_iter": 100.0}}
    v = {"launches_per_iter": 10, "host_ms": 0.100, "mode": "inference"}
    t = gap_host.host_terms(v, e, one, reduce_overhead=False)
    assert t["wrapper"][0] == pytest.approx(0.048) and t["graph_breaks"][0] == 0.0
    assert ("38 us of the call's 100 us host time around the graphs and the cache lookups: Dynamo's frame entry "
            "and the compiled frame's code around the graph; ") in t["wrapper"][1]
    assert "loop" not in t
    # a graph break counted with no resumed frame entered, or a resumed frame with none counted:
    # the time around the graphs is the eager code between them either way
    for total, frames in (({"graph_breaks": 1}, one["guards"]["frames"]),
                          ({"graph_breaks": 0}, one["guards"]["frames"] + [
                              {"code": "torch_dynamo_resume_in_forward_at_3 (/x/m.py:3)", "entry": 0, "entries": 1,
                               "lookup_us": 0.0}])):
        broke = {**one, "total": total, "guards": {**one["guards"], "frames": frames}}
        t = gap_host.host_terms(v, e, broke, reduce_overhead=False)
        assert t["wrapper"][0] == pytest.approx(0.010) and t["graph_breaks"][0] == pytest.approx(0.038)
        assert ("38 us of the call's 100 us host time around the graphs and the cache lookups: the eager code "
                "between the graphs and the frames' own code; ") in t["graph_breaks"][1]
    assert sum(ms for ms, _ in t.values()) == pytest.approx(0.100 - 0.040)   # the call's host time less eager's
    # DYN (a graph break, 2 graphs of 100 us, lookups 2 + 3 found and 7 missed) in a 300 us call:
    # 188 us of eager code between the graphs, in graph_breaks beside the resumed lookup and wrapper
    dyn = {**DYN, "guards": {**DYN["guards"], "iteration_host_us_per_iter": 300.0}}
    t = gap_host.host_terms({**v, "host_ms": 0.340}, e, dyn, reduce_overhead=False)
    assert t["graph_breaks"][0] == pytest.approx((3.0 + 25.0 + 188.0) / 1e3)
    assert t["wrapper"][0] == pytest.approx(0.025) and "eager code between the graphs" in t["graph_breaks"][1]
    # the graphs and lookups over the call's time (timer noise): nothing added, never negative
    small = {**one, "guards": {**one["guards"], "iteration_host_us_per_iter": 50.0}}
    assert gap_host.host_terms(v, e, small, reduce_overhead=False)["wrapper"][0] == pytest.approx(0.010)
    # a record without the call's time: the wrapper alone
    bare = {**one, "guards": {k: x for k, x in one["guards"].items() if k != "iteration_host_us_per_iter"}}
    assert gap_host.host_terms(v, e, bare, reduce_overhead=False)["wrapper"][0] == pytest.approx(0.010)


def test_a_training_loops_host_time_outside_the_compiled_forward_is_a_term():
    """DYN in training with the iteration's host time, 300 us: the graphs' 100 us, the
    lookups 2 + 3 found and 7 missed: 188 us outside them (backward, loss, optimizer step).
    With it the host costs are the iteration's 300 us plus the windows' compile 40 us."""
    e = {"launches_per_iter": 8, "host_per_launch_us": 5.0, "host_ms": 0.040}
    dyn = {**DYN, "guards": {**DYN["guards"], "iteration_host_us_per_iter": 300.0}}
    v = {"launches_per_iter": 10, "host_ms": 0.340, "mode": "train"}
    t = gap_host.host_terms(v, e, dyn, reduce_overhead=False)
    assert t["loop"][0] == pytest.approx(0.188)
    assert "188 us of the iteration's 300 us host time outside the compiled forward (100 us)" in t["loop"][1]
    assert sum(ms for ms, _ in t.values()) == pytest.approx(0.340 - 0.040)   # all exposed: nothing left over
    t = gap_host.host_terms({**v, "host_ms": 0.170}, e, dyn, reduce_overhead=False)
    assert t["loop"][0] == pytest.approx(0.094) and "50% exposed" in t["loop"][1]
    # inference, or a record without the iteration's time: no such term
    assert "loop" not in gap_host.host_terms({**v, "mode": "inference"}, e, dyn, reduce_overhead=False)
    assert "loop" not in gap_host.host_terms(v, e, DYN, reduce_overhead=False)
    # the graphs and lookups over the iteration's time (timer noise): 0, never negative
    small = {**DYN, "guards": {**DYN["guards"], "iteration_host_us_per_iter": 90.0}}
    assert gap_host.host_terms(v, e, small, reduce_overhead=False)["loop"][0] == 0.0


def test_a_skipped_cuda_graph_names_the_launch_term():
    dyn = {**DYN, "total": {**DYN["total"], "cudagraph_skips": 1},
           "cudagraph_skip_reasons": ["skipping cudagraphs due to mutated inputs (1 instances)"]}
    t = gap_host.host_terms({"launches_per_iter": 30}, {"launches_per_iter": 30, "host_per_launch_us": 5.0},
                              dyn, reduce_overhead=True)
    assert "launches" not in t and "wrapper" not in t and "mutated inputs" in t["cudagraph_skipped"][1]
    # no launch more than eager's, and 30 launches at 5 us are more than the graphs' 100 us: no wrapper
    assert t["cudagraph_skipped"][0] == 0.0
    t = gap_host.host_terms({"launches_per_iter": 12}, {"launches_per_iter": 30, "host_per_launch_us": 5.0},
                              dyn, reduce_overhead=True)
    assert t["cudagraph_skipped"][0] == pytest.approx((-18 * 5.0 + (100 - 12 * 5.0) / 2) / 1e3)
    assert "cudagraph_skipped" not in gap_host.host_terms({}, {}, dyn, reduce_overhead=False)


def test_audit_passes_the_written_ledger_and_finds_an_edit(recorded, tmp_path):
    h, k, led = recorded
    os.makedirs(tmp_path / "tables")
    led.to_csv(tmp_path / "tables" / "gap_ledger.csv", index=False)
    a = Audit()
    audit_gap.check(a, str(tmp_path), h)
    assert a.violations == [] and a.checks >= 4 * 6
    edited = led.copy()
    edited.loc[(edited["term"] == "kept") & (edited["model"] == "gpt2") & (edited["mode"] == "train"), "ms"] += 0.5
    edited.loc[(edited["term"] == "total") & (edited["model"] == "resnet50"), "sentence"] = "1.00x: guards."
    b = Audit()
    audit_gap.check_ledger(b, edited, h)
    # gpt2 train adds up no more and its sentence quotes the edited term; resnet50's two sentences are not their rows'
    assert len(b.violations) == 4
    assert any("add up" in x and "gpt2" in x for x in b.violations)


def test_case_verdicts_read_expected_causes_without_importing():
    exp = gap_ledger.expected_causes({"gb": f"{CASES}/graph_break.py:build",
                                      "tw": {"factory": f"{CASES}/tiny_wrapper.py:build"},
                                      "bert": "fusionlab.experiments.real_models.bert:build"})
    assert exp == {"gb": ("compile", ("graph_breaks",)), "tw": ("compile", ("wrapper",))}
    assert "graph_break" not in sys.modules
    rows = [gap_ledger.rows_of({"model": "gb", "variant": "compile", "batch": 8, "size": "default",
                                "mode": "inference", "dtype": "bfloat16", "backend": "nsys", "device": "cuda",
                                "wall_ms": 0.2, "eager_wall_ms": 0.15, "speedup": 0.75, "launches_per_iter": 10},
                               {"launches_per_iter": 8, "host_per_launch_us": 5.0},
                               {**DYN, "windows_compile_us_per_iter": 0.0,
                                "guards": {**DYN["guards"], "missed_lookup_us_per_iter": 0.0}},
                               pd.DataFrame(), pd.DataFrame())]
    led = pd.DataFrame([r for rs in rows for r in rs])
    v = gap_ledger.case_verdicts(led, exp)
    assert v[v["model"] == "gb"]["top"].iloc[0] == "graph_breaks" and v[v["model"] == "gb"]["ok"].iloc[0]
    assert v[v["model"] == "tw"]["sentence"].iloc[0] == "no ledger row" and not v[v["model"] == "tw"]["ok"].iloc[0]


def _snap(counters, compile_s=0.0, entries=None, trees=None):
    return {"counters": counters, "compile_s": compile_s, "cache_entries": entries or {},
            "guard_failures": {}, "cudagraph_trees": trees}


def test_dynamo_summary_and_delta_from_snapshots_by_hand():
    before = _snap({"frames": {"total": 2, "ok": 2}, "stats": {"unique_graphs": 2},
                    "graph_break": {"Unsupported Tensor.item() call\n  Explanation: ...": 1},
                    "resumes": {"torch_dynamo_resume_in_forward_at_24": 1}}, 3.0,
                   {"forward (/x/m.py:22)": 1, "torch_dynamo_resume_in_forward_at_24 (/x/m.py:24)": 1},
                   {"recordings": 2, "warmups": 2, "rerecords": 0, "managers": 1})
    s = dynamo_record.summary(before)
    assert s["graph_breaks"] == 1 and s["graph_break_reasons"][0]["reason"] == "Unsupported Tensor.item() call"
    assert s["graph_break_sites"] == [{"function": "forward", "line": 24, "count": 1, "file": "/x/m.py"}]
    after = _snap({"frames": {"total": 12, "ok": 10}, "stats": {"unique_graphs": 10},
                   "unimplemented": {"Dynamo recompile limit exceeded\n ...recompile_limit...": 1},
                   "inductor": {"cudagraph_skips": 1}}, 5.5, {"forward (/x/m.py:22)": 8},
                  {"recordings": 5, "warmups": 2, "rerecords": 3, "managers": 1})
    d = dynamo_record.delta(before, after)
    assert d == {"frames": 10, "unique_graphs": 8, "graph_breaks": -1, "recompiles": 7,
                 "recompile_limit_hits": 1, "cudagraph_skips": 1, "compile_s": 2.5,
                 "cudagraph_recordings": 3, "cudagraph_rerecords": 3, "cudagraph_warmups": 0}
    import itertools
    c = itertools.count(-3, -1)
    assert dynamo_record._counter_value(c) == -3 and next(c) == -3   # read without advancing it


def test_waterfall_draws_the_ledger(recorded):
    pytest.importorskip("matplotlib")
    from fusionlab.analysis.report.figures.gap_waterfall import gap_waterfall
    from fusionlab.analysis.report import style
    h, _, led = recorded
    fig = gap_waterfall({"gap_ledger": led, "runs": pd.read_csv(f"{DATA}/runs.csv"), "headline": h}, "gpt2")
    marks = pd.DataFrame(style.marks(fig))
    g = led[led["model"] == "gpt2"]
    assert len(marks) == ((g["ms"].fillna(0) != 0) | (g["term"] == "residual")).sum()   # zero terms not drawn
    a = Audit()
    audit_figures.check_marks(a, marks, {"gap_ledger": tables.with_size(led)}, None, "gap_waterfall/gpt2")
    labelled = marks["text"].notna().sum()
    assert a.violations == [] and a.checks == len(marks) + labelled and labelled >= len(marks) - 2
    edited = led.copy()
    edited.loc[(edited["model"] == "gpt2") & (edited["term"] == "fused"), "ms"] += 0.1
    b = Audit()
    audit_figures.check_marks(b, marks, {"gap_ledger": tables.with_size(edited)}, None, "gap_waterfall/gpt2")
    assert len(b.violations) == 2 and all("gap_ledger.ms" in x for x in b.violations)   # inference and train


@pytest.fixture(scope="module")
def gate():
    """BERT-base (batch 16, seq 512) and GPT-2 (batch 8, seq 512), bf16 inference on one H100:
    eager, compile and compile_reduce_overhead, 2 processes each."""
    h = pd.read_csv(f"{GATE}/headline.csv")
    k = pd.read_csv(f"{GATE}/kernels.csv.gz")
    with gzip.open(f"{GATE}/dynamo.json.gz", "rt") as f:
        runs = json.load(f)
    recs: dict = {}
    for r in sorted(runs, key=lambda r: r["metrics"]["repeat"]):
        key = tuple(str(r["metrics"][c]) for c in gap_ledger.KEYS)
        recs.setdefault(key, []).append(r["dynamo"])
    dyn = {key: gap_host.merged(rs) for key, rs in recs.items()}
    led = gap_ledger.build(h, k, dyn)
    return h, runs, dyn, {(m, v): g.set_index("term") for (m, v), g in led.groupby(["model", "variant"])}, led


def test_hidden_host_time_is_not_part_of_the_gap(gate):
    """BERT compile is GPU-bound (no exposed host time): the compiled wrapper's 4.25 ms of
    host time (the median of its two processes' 2705 and 5793 us) hides behind kernels and
    counts 0; eager's 74.7 us of exposed host time is saved; the top term is the library
    kernels: cuDNN's flash attention and a small cuBLAS GEMM gone, an FP32 FFMA GEMM new."""
    h, _, _, led, _ = gate
    b = led[("bert", "compile")]
    assert b.loc["wrapper", "ms"] == 0.0 and b.loc["guards", "ms"] == 0.0
    assert b.loc["wrapper", "detail"] == ("4249 us in 1 compiled graph call(s) per iteration (median of 2 "
                                          "processes); 0% exposed")
    assert b.loc["launches", "ms"] == pytest.approx(-0.074725575, abs=1e-9)
    # medians over the two processes, us: sm80 FFMA GEMM, cuDNN SDPA, nvjet 64x8 GEMM
    lib = (4711.20525 + 4702.5788) / 2 - (439.1065 + 441.35805) / 2 - (4.4096 + 4.6208) / 2
    assert b.loc["library", "ms"] == pytest.approx(lib / 1e3, abs=1e-9) and b.loc["library", "rank"] == 1
    assert b.loc["host_speed", "ms"] == pytest.approx(-(6.6786559533 - 4.12984375), abs=1e-9)
    assert b.loc["total", "ms"] == pytest.approx(10.2901427375 - 6.6786559533, abs=1e-9)
    assert abs(b.loc["residual", "ms"]) < 1e-9
    assert b.loc["total", "sentence"] == (
        "0.65x, +3.61 ms per iteration (interval -7.2 ms to +8.06 ms): library kernels displaced and their "
        "replacements (gone: cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_ 440 us; "
        "nvjet_sm90_tst_64x8_64x16_4x2_h_bz_bias_TNT 4.52 us; new: "
        "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x64x8_stage3 4.71 ms), +4.26 ms; generated kernels vs "
        "the eager kernels they replaced +1.84 ms; GPU idle gaps +112 us; against it: host speed between "
        "processes -2.55 ms; residual 0 us.")


def test_host_terms_share_the_exposed_host_time(gate):
    """GPT-2 compile: 354 us exposed of its 1965 us of host costs (guards 29.4 us and the graph
    call's 1935 us, medians of two processes), so each counts 18.0% of itself; with eager's
    1622 us of exposed host time taken off the launch path they add up to the headline's
    exposed host time against eager's."""
    h, _, _, led, _ = gate
    g = led[("gpt2", "compile")]
    guards, graph, launches = (29.37225 + 29.52275) / 2, (1951.253 + 1918.9155) / 2, 103 * 7.408216895
    share = 353.959925 / (guards + graph)
    assert g.loc["guards", "ms"] == pytest.approx(share * guards / 1e3, rel=1e-6)
    assert g.loc["wrapper", "ms"] == pytest.approx(share * (graph - launches) / 1e3, rel=1e-6)
    assert g.loc["launches", "ms"] == pytest.approx(share * launches / 1e3 - 1.6223995, rel=1e-6)
    for (model, variant), t in led.items():
        v = h[(h["model"] == model) & (h["variant"] == variant)].iloc[0]
        e = h[(h["model"] == model) & (h["variant"] == "eager")].iloc[0]
        host = t[t["side"] == "host"]["ms"].sum()
        assert host == pytest.approx(v["host_ms"] - e["host_ms"], abs=1e-12), (model, variant)
        assert t.loc["residual", "detail"].startswith("the variant's exposed host time no host term covers 0 us")


def test_pytorchs_own_kernels_are_eager_not_library(gate):
    """Kernels fusion.classify leaves as `other` whose demangled name is PyTorch's (at::native):
    GPT-2 eager's pow (vectorized_elementwise_kernel) is among the eager kernels compile
    fused away, not a library kernel; a CUDA graph's input copy (multi_tensor_apply_kernel)
    is a kernel added."""
    _, _, _, led, _ = gate
    g = led[("gpt2", "compile")]
    assert g.loc["library", "detail"] == ("gone: Kernel2 3.36 ms; new: nvjet_sm90_tst_160x256_64x4_2x1_v_bz_coopA_TNN "
                                          "446 us")
    assert g.loc["library", "ms"] == pytest.approx(((445.60265 + 446.7501) - (3364.71985 + 3359.69845)) / 2e3)
    assert g.loc["fused", "detail"] == "14 generated kernels 530 us against 9 eager kernels 2.13 ms"
    ro = led[("bert", "compile_reduce_overhead")]
    assert ro.loc["added", "detail"] == "multi_tensor_apply_kernel 3.86 us"
    assert ro.loc["added", "ms"] == pytest.approx((3.848 + 3.8752) / 2e3)
    assert gap_ledger.role("nvjet_sm90_tst_160x256_64x4_2x1_v_bz_coopA_TNN", "other", "nvjet_sm90_tst") == "library"


def test_dynamo_records_merge_the_processes(gate, tmp_path):
    """dynamo_records reads each run's timing.json beside its metrics.json and gives a
    configuration the median of its processes' timed costs, the first's counts."""
    _, runs, dyn, _, _ = gate
    files = []
    for i, r in enumerate(runs):
        d = tmp_path / str(i)
        d.mkdir()
        (d / "metrics.json").write_text(json.dumps(r["metrics"]))
        (d / "timing.json").write_text(json.dumps({"dynamo": r["dynamo"]}))
        files.append(str(d / "metrics.json"))
    got = gap_host.dynamo_records(files)
    assert got == dyn and len(got) == 4
    b = got[("bert", "16", "seq512", "inference", "bfloat16", "nsys", "cuda", "compile")]
    assert b["repeats"] == 2 and b["guards"]["graph_host_us_per_iter"] == pytest.approx((2705.305 + 5792.667) / 2)
    assert b["guards"]["frames"][0]["lookup_us"] == pytest.approx((27.61995 + 57.261775) / 2)
    assert b["total"]["recompiles"] == 0


def test_audit_passes_the_gate_ledger(gate, tmp_path):
    h, _, _, _, led = gate
    os.makedirs(tmp_path / "tables")
    led.to_csv(tmp_path / "tables" / "gap_ledger.csv", index=False)
    a = Audit()
    audit_gap.check(a, str(tmp_path), h)
    assert a.violations == [] and a.checks == 4 * 6


def test_the_summary_quotes_each_slower_configurations_sentence(gate, tmp_path):
    """The gate sweep's two BERT configurations ran slower than eager beside them: the
    summary's gap section quotes each one's sentence as the ledger holds it; a changed
    number, a line left out and a faster configuration listed are each caught."""
    from fusionlab.analysis.report import story
    h, _, _, _, led = gate
    md = "\n".join(["# t", "", *story.gap_md(led), "## next", ""])
    slower = led[(led["term"] == "total") & (led["ms"] > 0)]
    assert sorted(slower["model"] + " " + slower["variant"]) == ["bert compile", "bert compile_reduce_overhead"]
    assert md.count("\n- **bert** compile") == 2 and "(batch 16, seq512, inference, bfloat16): 0." in md
    a = Audit()
    audit_gap.check_summary(a, led, md)
    assert a.violations == [] and a.checks == 2
    line = next(x for x in md.splitlines() if x.startswith("- **bert** compile_reduce_overhead"))
    b = Audit()
    audit_gap.check_summary(b, led, md.replace(line, line.replace("residual", "residual 1 us, was")))
    assert len(b.violations) == 2   # the line as changed is no sentence, and the real one is left out
    c = Audit()
    gpt2 = led[(led["term"] == "total") & (led["model"] == "gpt2")].iloc[0]
    audit_gap.check_summary(c, led, md.replace("## next", f"- **gpt2** {gpt2['variant']} (batch 8): "
                                                          f"{gpt2['sentence']}\n## next"))
    assert len(c.violations) == 1 and "no configuration's ledger sentence" in c.violations[0]
    assert story.gap_md(led[led["model"] == "gpt2"]) == []   # nothing slower: no section


@pytest.mark.slow
def test_known_causes_are_in_dynamos_counters_on_the_cpu():
    """Each case compiled on the CPU (Inductor's C++ backend): the graph break with its
    line, the recompile loop up to the limit and its failed guard, the guard cost of the
    frames an iteration enters."""
    import torch
    sys.path.insert(0, CASES)
    try:
        import graph_break
        import recompile_loop
    finally:
        sys.path.remove(CASES)
    with torch.no_grad():
        torch._dynamo.reset()
        w = dynamo_record.Watch()
        m, (x,) = graph_break.build(4, torch.float32, "cpu")
        f = torch.compile(m)
        f(x)
        w.mark("check"); w.mark("warmup")
        f(x)
        w.mark("timing")
        rec = w.record(lambda: f(x), lambda: None, 1)
        assert rec["total"]["graph_breaks"] == 1
        assert rec["total"]["graph_break_sites"][0]["line"] == 25
        assert rec["total"]["graph_break_sites"][0]["file"].endswith("graph_break.py")
        assert "item()" in rec["total"]["graph_break_reasons"][0]["reason"]
        assert rec["guards"]["frames_per_iter"] == 2 and rec["guards"]["graph_calls_per_iter"] == 2
        assert rec["guards"]["lookup_us_per_iter"] > 0 and rec["windows"]["recompiles"] == 0

        torch._dynamo.reset()
        w = dynamo_record.Watch()
        m, (x,) = recompile_loop.build(4, torch.float32, "cpu")
        f = torch.compile(m)
        f(x)
        w.mark("check")
        limit = torch._dynamo.config.recompile_limit
        for _ in range(limit + 2):
            f(x)
        w.mark("warmup"); w.mark("timing")
        rec = w.record(lambda: f(x), lambda: None, 1)
        assert rec["total"]["recompiles"] == limit - 1 and rec["total"]["recompile_limit_hits"] == 1
        assert "self.step ==" in next(iter(rec["total"]["recompile_guards"].values()))
        assert rec["warmup"]["recompiles"] == limit - 1
        # past the limit the frame runs eager after a lookup of all its entries failed
        assert rec["guards"]["frames_per_iter"] == 0 and rec["guards"]["missed_frames_per_iter"] == 1
        assert rec["guards"]["frames"][0]["entries"] == limit
        assert not math.isnan(rec["guards"]["missed_lookup_us_per_iter"])


@pytest.mark.slow
def test_the_untraced_runner_records_dynamo_for_a_compiled_variant(tmp_path):
    """The runner's own record (--profiler none: timing.json): run.json's dynamo for the
    graph-break case, none for eager."""
    import json
    import subprocess
    for variant in ("compile", "eager"):
        out = tmp_path / variant / "timing.json"
        subprocess.run([sys.executable, "-m", "fusionlab.runner", "--model", "gap_graph_break", "--model-from",
                        json.dumps({"factory": f"{CASES}/graph_break.py:build"}), "--variant", variant,
                        "--batch", "4", "--warmup", "2", "--iters", "5", "--windows", "2", "--paired-eager",
                        "--paired-ci", "0", "--device", "cpu", "--profiler", "none", "--out", str(out)],
                       check=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT}, capture_output=True)
        rec = json.loads(out.read_text())
        assert rec["status"] == "ok"
        if variant == "eager":
            assert rec["dynamo"] is None
            continue
        d = rec["dynamo"]
        assert d["total"]["graph_breaks"] == 1 and d["windows"]["recompiles"] == 0 and d["window_iters"] == 10
        assert d["guards"]["frames_per_iter"] == 2 and d["guards"]["graph_host_us_per_iter"] > 0
        # the whole iteration's host time holds its two graphs' and the eager code between them
        assert d["guards"]["iteration_host_us_per_iter"] > d["guards"]["graph_host_us_per_iter"]
        assert d["missing"] == ["cudagraph replays (no torch counter)"]


@pytest.mark.slow
def test_cuda_graph_skip_and_recordings_are_recorded_on_the_gpu():
    """On a GPU (skipped without one): the mutated-input case under reduce-overhead has its
    CUDA graphs skipped with Inductor's reason; the tiny case's are recorded once and
    replayed after (no re-recording)."""
    import torch
    if not torch.cuda.is_available():
        pytest.skip("CUDA graphs need a GPU")
    sys.path.insert(0, CASES)
    try:
        import mutated_input
        import tiny_wrapper
    finally:
        sys.path.remove(CASES)
    sync = torch.cuda.synchronize
    with torch.no_grad():
        for mod, skipped in ((mutated_input, True), (tiny_wrapper, False)):
            torch._dynamo.reset()
            w = dynamo_record.Watch()
            m, (x,) = mod.build(8, torch.float32, "cuda")
            f = torch.compile(m, mode="reduce-overhead")
            for _ in range(3):
                f(x)
            w.mark("check"); w.mark("warmup")
            for _ in range(5):
                f(x)
            sync()
            w.mark("timing")
            rec = w.record(lambda: f(x), sync, 5)
            if skipped:
                assert rec["total"]["cudagraph_skips"] >= 1
                assert any("mutated" in r for r in rec["cudagraph_skip_reasons"])
            else:
                assert rec["total"]["cudagraph_skips"] == 0
                assert rec["total"]["cudagraph_trees"]["recordings"] >= 1
                assert rec["windows"]["cudagraph_recordings"] == rec["windows"]["cudagraph_rerecords"] == 0
