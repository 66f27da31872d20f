"""The reproduction's claims on synthetic sweeps built as the sweep writes its tables:
intervals over processes, host-bound ratios judged on kernel time, the claims measured in
their own processes (swept ranges, scaling from every point, the noise gate), and the
claims measurement's random order and hash on a CPU."""
import json

import pandas as pd
import pytest

from fusionlab.analysis.report import reproduction as R
from fusionlab.analysis.report.reproduction import verdict as V
from fusionlab.analysis.report.reproduction.measure import Sweep
from fusionlab.bench import claims as B

H, F, X, T, D = V.HOLDS, V.FAILS, V.INCONCLUSIVE, V.NOT_TESTED, V.NOT_ON_DEVICE


def _sweep(pw=(8.0, 7.8, 8.2), host=False, device="cuda", claims=True, lstm=(3.0, 4.0, 1.2)):
    """pointwise_heavy's per-process paired speedups `pw`; `host`: its compiled run
    host-bound (kernel 0.04 of 0.08 ms wall, eager kernel 0.30)."""
    rows = [("pointwise_heavy", "eager", 1024, 0.455, 0.30, 35, None, 1),
            ("pointwise_heavy", "compile", 1024, 0.1 if host else 0.0569, 0.04, 1, pw, 1),
            ("gelu", "eager", 16384, 7.8, 7.7, 9, None, 1), ("gelu", "aten_op", 16384, 0.714, 0.70, 1, None, 1),
            ("gelu", "compile", 16384, 0.72, 0.71, 1, None, 1), ("gelu", "cuda_seed", 16384, 1.68, 1.67, 1, None, 1),
            ("gelu", "triton_seed", 16384, 0.72, 0.71, 1, None, 1),
            ("mlp_small", "eager", 128, 0.14, 0.01, 5, None, 1), ("mlp_small", "nn_linear", 128, 0.1, 0.008, 3, None, 1),
            ("conv_bn_relu", "eager", 64, 1.0, 0.9, 3, None, 1), ("conv_bn_relu", "conv_bn_fold", 64, 0.8, 0.7, 2, None, 1)]
    runs, sp = [], []
    for model, var, b, wall, kern, k, paired, _ in rows:
        for rep in range(3):
            p = paired[rep] if paired else 1.0
            runs.append(dict(model=model, variant=var, batch=b, size="default", mode="inference", dtype="float32",
                             status="ok", device=device, backend="nsys", repeat=rep, wall_time_per_iter_ms=wall * (1 + 0.01 * rep),
                             gpu_time_per_iter_ms=kern * (1 + 0.001 * rep), kernels_per_iter=k, paired_speedup=p,
                             gpu="NVIDIA H100 80GB HBM3", launch_api_us=6.1, median_kernel_us=1.6, short_kernel_share=1.0))
        sp.append(dict(model=model, variant=var, batch=b, size="default", mode="inference", dtype="float32",
                       status="ok", device=device, backend="nsys", wall_time_per_iter_ms=wall, kernels_per_iter=k,
                       speedup_paired=sorted(paired)[1] if paired else 1.0, repeats_ok=3, max_abs_err=1e-6))
    recs = {}
    if claims:
        step = lambda f: {"values": [2, 3, 4, 5], "ms": [v * 1.15 * f for v in (2, 3, 4, 5)], "order": [4, 2, 5, 3]}  # noqa: E731
        recs = {"deep_mlp_steps": [step(f) for f in (0.99, 1.0, 1.01)],
                "deep_mlp_layers": [{"values": [2, 3, 4, 5], "ms": [0.1 + 0.2 * v * f for v in (2, 3, 4, 5)]}
                                    for f in (0.99, 1.0, 1.01)],
                "lstm_cudnn_4x": [{"batches": [16, 64, 1024], "ratio": [r * f for r in lstm],
                                   "cell_ms": [30.0] * 3, "cudnn_ms": [30 / r for r in lstm]} for f in (0.99, 1.0, 1.01)],
                "mlp_small_batch": [{"batches": [128, 1024, 4096], "eager_ms": [0.1] * 3, "variant_ms": [0.1] * 3,
                                     "ratio": [0.7 * f, 1.4, 2.2]} for f in (0.98, 1.0, 1.02)],
                "mlp_memory_traffic": [{"cold": {"status": "ok", "dram_bytes": 185000.0},
                                        "steady": {"status": "ok", "dram_bytes": 0.0, "l2_bytes": 7.7e6}}]}
    return Sweep(pd.DataFrame(runs), pd.DataFrame(sp), claims={"claims": recs, "claims_sha256": "abc"})


def _v(sweep):
    return {r.claim["id"]: r for r in R.evaluate(R.load_claims(), sweep)}


def test_a_ratio_is_judged_by_its_t_interval_over_processes():
    r = _v(_sweep())["pointwise_10x"]
    assert r.verdict == H and "(95% t-interval over 3 processes)" in r.measured and "paired wall-time" in r.measured
    # the point inside, the interval reaching below the band: inconclusive, not holds
    r = _v(_sweep(pw=(6.0, 8.0, 10.0)))["pointwise_10x"]
    assert r.verdict == X and "straddles an edge of 7.27-16.4x" in r.why
    assert _v(_sweep(pw=(5.2, 5.7, 6.2)))["pointwise_10x"].verdict == F


def test_a_host_bound_ratio_is_judged_on_kernel_time_with_wall_time_beside():
    r = _v(_sweep(pw=(5.2, 5.7, 7.6), host=True))["pointwise_10x"]
    assert "kernel-time speedup (host-bound: exposed host time 60% of the wall time" in r.measured
    assert r.measured.startswith("7.5x") and r.verdict == H
    assert "Welch t-interval over 3 + 3 processes" in r.measured
    assert r.notes[0].startswith("wall time, shown beside: 6.08x [3.72, 9.95] (95% t-interval over 3")


def test_claims_as_the_texts_state_them():
    v = _v(_sweep())
    assert v["gelu_ordering"].verdict == F and "cuda_seed = triton_seed: does not hold" in v["gelu_ordering"].why
    assert "double precision" in " ".join(v["gelu_ordering"].notes)
    small = v["mlp_small_batch"]
    assert small.verdict == H and "1024" in small.measured and "more at" not in small.why
    assert v["mlp_memory_traffic"].verdict == H and "steady state, shown, not judged" in v["mlp_memory_traffic"].notes[0]
    assert v["nn_linear_5_to_3"].verdict == H and v["conv_bn_fold_exact"].verdict == H
    lstm = v["lstm_cudnn_4x"]
    assert lstm.verdict == H and lstm.why.startswith("holds at batch 16, batch 64 of the batches swept (2 of 3)")
    assert v["deep_mlp_steps"].verdict == H and v["deep_mlp_steps"].measured.startswith("log-log slope 1.000")
    assert v["deep_mlp_layers"].verdict == H
    assert v["matmul_cubic"].verdict == T and v["add_relu_mul_2_3x"].verdict == T    # not measured here
    assert v["jit_conv_relu_pool"].verdict == T


def test_the_noise_gate_between_processes():
    sw = _sweep()
    sw.claims["deep_mlp_steps"][2]["ms"] = [t * 1.4 for t in sw.claims["deep_mlp_steps"][2]["ms"]]
    r = _v(sw)["deep_mlp_steps"]
    assert r.verdict == T and r.why.startswith("processes disagree: their times differ by up to")
    assert r.notes[0].startswith("would read")


def test_page_prints_tolerances_hash_and_inconclusive(tmp_path):
    res = R.evaluate(R.load_claims(), _sweep(pw=(6.0, 8.0, 10.0)))
    md = R.markdown(res, "H100", "cuda", R.sha256(), "abc")
    assert f"sha256 `{R.sha256()}`" in md and "read another version of it** (sha256 `abc`)" in md
    assert "1 inconclusive" in md
    cpu = R.evaluate(R.load_claims(), _sweep(device="cpu"))
    assert {r.claim["id"] for r in cpu if r.verdict == D} == {c["id"] for c in R.load_claims() if c["needs"] == "gpu"}


@pytest.mark.slow
def test_the_figure_draws_every_verdict(tmp_path):
    res = R.evaluate(R.load_claims(), _sweep(pw=(6.0, 8.0, 10.0)))
    assert R.figure(res, "H100", str(tmp_path / "f.png"), str(tmp_path / "f.svg")) >= 1


def test_claims_bench_order_on_a_cpu():
    m = {"kind": "mlp_scaling", "axis": "steps", "values": [1, 2, 3], "dim": 8, "batch": 2, "num_layers": 1,
         "warmup": 0, "trials": 1}
    out = B.mlp_scaling(m, "cpu", seed=5)
    assert out["values"] == [1, 2, 3] and sorted(out["order"]) == [1, 2, 3] and out["seed"] == 5
    assert out["order"] == B.shuffled([1, 2, 3], 5)
    ch = B.pointwise_chain({"variant": "eager", "elements": [16, 32], "warmup": 0, "iters": 1, "windows": 1}, "cpu")
    assert ch["elements"] == [16, 32] and ch["matches"] == [True, True] and len(ch["ratio"]) == 2
    lstm = B.lstm_sequence({"seq": 2, "batches": [1, 2], "input_size": 4, "hidden": 4, "warmup": 0, "trials": 1}, "cpu")
    assert lstm["batches"] == [1, 2] and lstm["ratio"] == [a / c for a, c in zip(lstm["cell_ms"], lstm["cudnn_ms"])]


@pytest.mark.slow
def test_claims_bench_records_the_hash_and_order(tmp_path):
    m = {"kind": "mlp_scaling", "axis": "steps", "values": [1, 2, 3], "dim": 8, "batch": 2, "num_layers": 1,
         "warmup": 0, "trials": 1}
    y = tmp_path / "c.yaml"
    y.write_text("claims:\n  - {id: s, needs: any, measure: " + json.dumps(m) + "}\n")
    assert B.main(["--claims", str(y), "--device", "cpu", "--repeats", "1", "--out", str(tmp_path / "o.json")]) == 0
    rec = json.loads((tmp_path / "o.json").read_text())
    assert rec["claims_sha256"] == B.sha256(str(y)) and rec["order"] == [{"seed": B.SEED, "claims": ["s"]}]
    assert len(rec["claims"]["s"]) == 1
