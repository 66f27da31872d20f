"""The reproduction rubric: a table of synthetic measured values per claim type that must
give each verdict (inside, outside, proxy, compound with one failing part), and the
claims measured in their own configuration (reproduction/claims.json)."""
import pandas as pd
import pytest

from fusionlab.analysis.report import reproduction as R
from fusionlab.analysis.report.reproduction import verdict as V
from fusionlab.analysis.report.reproduction.measure import Sweep
from fusionlab.bench import claims as B

H, F, T, D = V.HOLDS, V.FAILS, V.NOT_TESTED, V.NOT_ON_DEVICE

# (rule, arguments, verdict): inside, outside, missing, and the interval's part
RULES = [
    (V.ratio, (8.0, 10.9, 1.5, 7.5, 9.0), H),             # inside, interval inside
    (V.ratio, (8.0, 10.9, 1.5, 6.0, 9.0), H),             # inside, interval reaching past the band
    (V.ratio, (6.43, 10.9, 1.5, 6.09, 7.32), F),          # outside: the interval touching the band is not enough
    (V.ratio, (6.43, 10.9, 1.5), F),                      # outside, one process
    (V.ratio, (8.0, 10.9, 1.5, 1.0, 2.0), F),             # inside, interval wholly outside
    (V.ratio, (1.16, 4.0, 1.5, 1.15, 1.17), F),           # the right direction, 3.4x off
    (V.ratio, (0.98, 0.994, 1.1), H),                     # "about 1x"
    (V.ratio, (1.72, 0.994, 1.1), F),
    (V.ratio, (None, 4.0, 1.5), T),
    (V.count, ({"e": 35, "c": 1}, {"e": 35, "c": 1}), H),
    (V.count, ({"e": 35, "c": 2}, {"e": 35, "c": 1}), F),
    (V.count, ({"e": None, "c": 1}, {"e": 35, "c": 1}), T),
    (V.ordering, ({"a": 1.0, "b": 2.0, "c": 8.0}, {"a": 1.1, "b": 1.8, "c": 8.1}), H),
    (V.ordering, ({"a": 1.0, "b": 1.01, "c": 8.0}, {"a": 1.1, "b": 1.0, "c": 8.1}), H),   # tied within 2%
    (V.ordering, ({"a": 1.0, "b": 0.5, "c": 8.0}, {"a": 1.1, "b": 1.8, "c": 8.1}), F),    # one swap
    (V.ordering, ({"a": 1.0}, {"a": 1.1, "b": 1.8}), T),
    (V.at_most, (0.71, 1.1), H),
    (V.at_most, (1.3, 1.1, 1.2, 1.4), F),
    (V.greater, (0.71, 1.12, "at 128", "at 4096"), H),
    (V.greater, (0.71, 0.70, "at 128", "at 1024"), F),
    (V.launch, (6.99, 1.66, 1.0), H),
    (V.launch, (6.99, 1.66, 0.2), F),                     # one of the two conditions only
    (V.launch, (None, 1.66, 1.0), T),
    (V.traffic, (180000, 167168, 1.25), H),
    (V.traffic, (7.7e6, 167168, 1.25), F),
    (V.traffic, (None, 167168, 1.25), T),
    (V.scaling, ([4, 8, 12, 16], [0.2, 0.4, 0.6, 0.8], 0.98, 0.15), H),
    (V.scaling, ([4, 8, 12, 16], [0.198, 0.235, 0.333, 0.486], 0.98, 0.15), F),   # R^2 0.93, exponent 1.35
    (V.scaling, ([4, 8, 12, 16], [0.2, 0.4, 0.6, 0.8], 0.98, 0.15, [1.0, 1.4, 1.5]), H),
    (V.scaling, ([4, 8, 12, 16], [0.2, 0.4, 0.6, 0.8], 0.98, 0.15, [1.3, 1.4, 1.5]), F),  # processes disagree
    (V.scaling, ([4, 8], [0.2, 0.4], 0.98, 0.15), T),
    (V.compound, ([("a", H, ""), ("b", H, "")],), H),
    (V.compound, ([("a", H, ""), ("b", F, ""), ("c", T, "")],), F),
    (V.compound, ([("a", H, ""), ("b", T, "")],), T),
    (V.compound, ([("a", D, ""), ("b", D, "")],), D),
]


@pytest.mark.parametrize("rule,args,verdict", RULES)
def test_rule_table(rule, args, verdict):
    assert rule(*args)[0] == verdict


def test_four_verdicts_and_reason_from_the_numbers():
    assert V.VERDICTS == ("holds", "does not hold", "not tested", "not measurable on this device")
    why = V.ratio(6.43, 10.9, 1.5)[1]
    assert "6.43x" in why and "7.27-16.4x" in why and "1.7x off" in why and "faster" in why
    assert "within" not in why.split("(")[0]


# --- the claims on synthetic sweeps ---------------------------------------------------

def _sweep(paired, device="cuda", mlp=None, lstm_ratio=3.0, claims=True, batch=1024, repeats=3):
    """speedups.csv / runs.csv rows as the sweep writes them; `paired`: pointwise's speedup,
    lo, hi; `mlp`: compile's paired speedup on the MLP by batch."""
    mlp = mlp or {128: 0.71, 1024: 1.4, 4096: 2.2}
    s, lo, hi = paired
    rows = [("pointwise_heavy", "eager", batch, "default", 0.455, 1.0, None, None, 35),
            ("pointwise_heavy", "compile", batch, "default", 0.455 / s, s, lo, hi, 1),
            ("matmul_heavy", "eager", 1024, "default", 2.76, 1.0, None, None, 8),
            ("matmul_heavy", "compile", 1024, "default", 2.85, 0.974, 0.96, 0.99, 8),
            ("gelu", "eager", 16384, "default", 7.8, 1.0, None, None, 9),
            ("gelu", "aten_op", 16384, "default", 0.714, 10.9, None, None, 1),
            ("gelu", "compile", 16384, "default", 0.9, 8.7, None, None, 1),
            ("gelu", "cuda_seed", 16384, "default", 1.55, 5.0, None, None, 1),
            ("gelu", "triton_seed", 16384, "default", 0.72, 10.8, None, None, 1),
            ("lstm_cell", "eager", 1024, "default", 0.433, 1.0, None, None, 13),
            ("lstm_cell", "cudnn_lstm", 1024, "default", 0.379, 1.16, 1.15, 1.17, 3),
            ("mlp_small", "eager", 128, "default", 0.14, 1.0, None, None, 5)]
    for b, v in mlp.items():
        rows += [("mlp", "eager", b, "default", 0.1, 1.0, None, None, 10),
                 ("mlp", "compile", b, "default", 0.1 / v, v, v * 0.98, v * 1.02, 8)]
    sp = pd.DataFrame(rows, columns=["model", "variant", "batch", "size", "wall_time_per_iter_ms", "speedup_paired",
                                     "speedup_paired_lo", "speedup_paired_hi", "kernels_per_iter"])
    sp["mode"], sp["dtype"], sp["status"], sp["device"], sp["backend"] = "inference", "float32", "ok", device, "nsys"
    sp["repeats_ok"] = repeats
    runs = sp.assign(gpu="NVIDIA H100 80GB HBM3", launch_api_us=6.1, median_kernel_us=1.6, short_kernel_share=1.0)
    recs = {}
    if claims:
        line = {"values": [4, 8, 12, 16, 20], "ms": [0.4, 0.8, 1.2, 1.6, 2.0]}
        recs = {"deep_mlp_layers": [line] * 3,
                "deep_mlp_steps": [{"values": [2, 4, 6, 8, 10], "ms": [0.2, 0.5, 1.0, 1.8, 3.0]}] * 3,
                "lstm_cudnn_4x": [{"ratio": lstm_ratio * f, "cell_ms": 30.0, "cudnn_ms": 30 / lstm_ratio}
                                  for f in (0.97, 1.0, 1.03)],
                "mlp_small_batch": [{"batches": list(mlp), "eager_ms": [0.1] * len(mlp),
                                     "variant_ms": [0.1 / (v * f) for v in mlp.values()],
                                     "ratio": [v * f for v in mlp.values()]} for f in (0.98, 1.0, 1.02)],
                "mlp_memory_traffic": [{"cold": {"status": "ok", "dram_bytes": 170000.0, "l2_bytes": 7.7e6},
                                        "steady": {"status": "ok", "dram_bytes": 0.0, "l2_bytes": 7.7e6}}]}
    return Sweep(runs, sp, claims={"claims": recs})


def _verdicts(sweep):
    return {r.claim["id"]: r for r in R.evaluate(R.load_claims(), sweep)}


def test_claims_inside_outside_proxy_and_compound():
    inside = _verdicts(_sweep((8.0, 7.5, 9.0)))
    assert inside["pointwise_10x"].verdict == H
    assert inside["matmul_1x"].verdict == H
    assert inside["launches_35_to_1"].verdict == H
    assert inside["mlp_small_batch"].verdict == H
    assert inside["gelu_ordering"].verdict == F                  # Triton ahead of CUDA, beyond the spread
    assert inside["lstm_cudnn_4x"].verdict == H                  # the sequence, not the one step
    assert "one step" in " ".join(inside["lstm_cudnn_4x"].notes)
    assert inside["deep_mlp_layers"].verdict == H
    assert inside["deep_mlp_steps"].verdict == F                 # quadratic in steps
    tr = inside["mlp_memory_traffic"]
    assert tr.verdict == F and "cold: holds" in tr.why and "steady: does not hold" in tr.why
    assert inside["launch_bound_kernels"].verdict == T           # inference is not the text's training loop
    assert "would read holds" in inside["launch_bound_kernels"].notes[0]

    outside = _verdicts(_sweep((6.43, 6.09, 7.32), mlp={128: 0.71, 1024: 0.70, 4096: 1.12}, lstm_ratio=1.16))
    assert outside["pointwise_10x"].verdict == F
    assert outside["lstm_cudnn_4x"].verdict == F
    small = outside["mlp_small_batch"]                           # compound: the 1024 part fails
    assert small.verdict == F and "batch 1024: does not hold" in small.why and "batch 128: holds" in small.why

    proxy = _verdicts(_sweep((8.0, 7.5, 9.0), batch=4096, claims=False))
    assert proxy["pointwise_10x"].verdict == T and "batch 4096" in proxy["pointwise_10x"].why
    assert "would read holds" in proxy["pointwise_10x"].notes[0]
    for cid in ("deep_mlp_layers", "deep_mlp_steps", "lstm_cudnn_4x", "mlp_memory_traffic", "mlp_small_batch"):
        assert proxy[cid].verdict == T


def test_batches_measured_in_their_own_processes():
    """The MLP's batch trend from its own processes: per batch the median of three paired
    speedups and its interval over them; the sweep's run at 128 beside it, not judged."""
    r = _verdicts(_sweep((8.0, 7.5, 9.0), mlp={128: 0.5, 1024: 1.5, 4096: 2.0}))["mlp_small_batch"]
    assert r.verdict == H
    assert "128: 0.5x [0.49, 0.51], 1024: 1.5x [1.47, 1.53], 4096: 2x [1.96, 2.04] over 3 processes" in r.measured
    assert "1024: eager 0.1 / compile 0.0667 ms = 1.5x (medians, shown)" in r.absolute
    assert "the sweep's run at batch 128: 0.5x [0.49, 0.51] (shown beside, not judged)" in r.notes
    assert [row[-1] for row in r.plot["rows"]] == [H, H, H]
    bad = _sweep((8.0, 7.5, 9.0))
    bad.claims["mlp_small_batch"] = [{"batches": [], "check": [{"batch": 128, "passed": False,
                                                                "reason": "non-finite values where eager has none"}]}]
    r = _verdicts(bad)["mlp_small_batch"]
    assert r.verdict == T and "batch 128: non-finite values where eager has none" in r.why


def test_a_busy_host_gives_no_verdict():
    """A claim's own processes whose trials vary more than 25% (robust CV) are not judged:
    the reading is shown, the verdict is not tested."""
    sw = _sweep((8.0, 7.5, 9.0))
    sw.claims["deep_mlp_layers"] = [dict(r, cv=[0.05, 0.4]) for r in sw.claims["deep_mlp_layers"]]
    r = _verdicts(sw)["deep_mlp_layers"]
    assert r.verdict == T and r.why.startswith("timing too noisy to judge: its processes' trials vary up to 40%")
    assert r.notes[0].startswith("would read holds: t = ")
    sw.claims["deep_mlp_layers"] = [dict(r, cv=[0.05, 0.2]) for r in sw.claims["deep_mlp_layers"]]
    assert _verdicts(sw)["deep_mlp_layers"].verdict == H
    # a sweep's ratio is judged by its interval over processes, however its windows vary
    sw.runs["untraced_wall_cv"] = 0.65
    assert _verdicts(sw)["pointwise_10x"].verdict == H
    assert B.cv([1.0] * 9 + [3.0]) == 0.0                      # one outlier among ten
    assert abs(B.cv([1, 2, 3, 4, 5]) - 2 / 1.349 / 3) < 1e-12   # quartiles 2 and 4, median 3


def test_printed_times_agree_with_their_ratio():
    r = _verdicts(_sweep((8.0, 7.5, 9.0)))["pointwise_10x"]
    assert "8x [7.5, 9] over 3 processes" in r.measured
    assert "eager 0.455 / compile 0.0569 ms in their own processes = 8x" in r.absolute


def test_cpu_sweep_and_figure(tmp_path):
    res = R.evaluate(R.load_claims(), _sweep((8.0, 7.5, 9.0), device="cpu"))
    gpu = {r.claim["id"] for r in res if r.verdict == D}
    assert gpu == {c["id"] for c in R.load_claims() if c["needs"] == "gpu"}
    res = R.evaluate(R.load_claims(), _sweep((6.43, 6.09, 7.32)))
    assert R.figure(res, "H100", str(tmp_path / "f.png"), str(tmp_path / "f.svg")) == len(res)
    md = R.markdown(res, "H100", "cuda")
    assert "| claim | source |" in md and "direction only" not in md
    cpu = R.markdown(R.evaluate(R.load_claims(), _sweep((8.0, 7.5, 9.0), device="cpu")), "CPU", "cpu")
    assert ("need a GPU and are not measurable on this device (pointwise_10x, matmul_1x, launch_bound_kernels, "
            "mlp_small_batch, lstm_cudnn_4x, mlp_memory_traffic); nothing is shown for them") in cpu
    assert "Read on this CPU: launches_35_to_1, gelu_ordering, deep_mlp_layers, deep_mlp_steps." in cpu


def test_claims_bench_measures_the_mlp_on_a_cpu(tmp_path):
    m = {"kind": "mlp_scaling", "axis": "steps", "values": [1, 2, 3], "dim": 16, "batch": 4, "num_layers": 2,
         "warmup": 1, "trials": 2}
    out = B.mlp_scaling(m, "cpu")
    assert out["values"] == [1, 2, 3] and len(out["ms"]) == 3 and all(t > 0 for t in out["ms"])
    lstm = B.lstm_sequence({"seq": 3, "batch": 2, "input_size": 8, "hidden": 8, "warmup": 1, "trials": 2}, "cpu")
    assert lstm["ratio"] == lstm["cell_ms"] / lstm["cudnn_ms"]
    assert B.ncu_traffic({}, "cpu", None, str(tmp_path))["status"] == "not run"
    pair = B.compile_batches({"model": "mlp", "variant": "eager", "batches": [2, 3], "warmup": 1, "iters": 2,
                              "windows": 2}, "cpu")
    assert pair["batches"] == [2, 3] and [c["passed"] for c in pair["check"]] == [True, True]
    assert pair["ratio"] == [e / v for e, v in zip(pair["eager_ms"], pair["variant_ms"])]
    bad = tmp_path / "c.yaml"
    bad.write_text("claims:\n  - {id: x, measure: {kind: nope}}\n")
    assert B.main(["--claims", str(bad), "--out", str(tmp_path / "o.json")]) == 2


def test_a_proxy_is_drawn_as_not_tested():
    r = _verdicts(_sweep((8.0, 7.5, 9.0), batch=4096))["pointwise_10x"]
    assert [row[-1] for row in r.plot["rows"]] == [T] and r.plot["rows"][0][0].endswith("(not judged)")
