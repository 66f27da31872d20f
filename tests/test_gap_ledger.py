"""The gap ledger (analysis.sweep.gap_ledger) on the H100 real-network tables and on a
dynamo record made by hand: the terms add up to the gap, each term is its record's number
computed by hand, the sentence names the top term, the audit (report.audit_gap) passes
the written ledger and finds an edited one; the runner's dynamo record
(runner.dynamo_record) from snapshots written by hand; and, in the slow tier, Dynamo's
own counters for the known-cause cases of examples/slow_compile on the CPU."""
import math
import os
import sys

import pandas as pd
import pytest

from fusionlab.analysis.report import audit_gap
from fusionlab.analysis.report.audit import Audit
from fusionlab.analysis.sweep import gap_ledger
from fusionlab.runner import dynamo_record
from conftest import ROOT

DATA = f"{ROOT}/tests/data/real_models_h100"
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
    assert text.startswith("2.23x, -4.43 ms per iteration: generated kernels vs the eager kernels they replaced")
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
    t = gap_ledger.host_terms(v, e, DYN, reduce_overhead=False)
    assert t["launches"][0] == pytest.approx(2 * 5.0 / 1e3)
    # each graph's wrapper: (100 us in the graphs - 10 launches x 5 us) / 2 graphs = 25 us
    assert t["wrapper"][0] == pytest.approx(25.0 / 1e3)
    assert t["guards"][0] == pytest.approx(2.0 / 1e3)
    assert t["graph_breaks"][0] == pytest.approx((3.0 + 25.0) / 1e3)   # the resumed frame's lookup and wrapper
    assert "graph_break.py:24" in t["graph_breaks"][1] and "Tensor.item()" in t["graph_breaks"][1]
    assert t["recompiles"][0] == pytest.approx((40.0 + 7.0) / 1e3)
    assert "recompile limit hit 1x" in t["recompiles"][1] and "self.step == 2" in t["recompiles"][1]


def test_a_skipped_cuda_graph_names_the_launch_term():
    dyn = {**DYN, "total": {**DYN["total"], "cudagraph_skips": 1},
           "cudagraph_skip_reasons": ["skipping cudagraphs due to mutated inputs (1 instances)"]}
    t = gap_ledger.host_terms({"launches_per_iter": 30}, {"launches_per_iter": 30, "host_per_launch_us": 5.0},
                              dyn, reduce_overhead=True)
    assert "launches" not in t and "wrapper" not in t and "mutated inputs" in t["cudagraph_skipped"][1]
    # no launch more than eager's, and 30 launches at 5 us are more than the graphs' 100 us: no wrapper
    assert t["cudagraph_skipped"][0] == 0.0
    t = gap_ledger.host_terms({"launches_per_iter": 12}, {"launches_per_iter": 30, "host_per_launch_us": 5.0},
                              dyn, reduce_overhead=True)
    assert t["cudagraph_skipped"][0] == pytest.approx((-18 * 5.0 + (100 - 12 * 5.0) / 2) / 1e3)
    assert "cudagraph_skipped" not in gap_ledger.host_terms({}, {}, dyn, reduce_overhead=False)


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
    audit_gap.check_waterfall(a, marks, led, "gap_waterfall/gpt2")
    assert a.violations == [] and a.checks == len(marks)


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
