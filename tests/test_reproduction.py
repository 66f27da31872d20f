"""The source texts' claims against a sweep: verdict rules, the claims file, the evaluation
on small tables built from real numbers (an H100 zoo sweep and a CPU smoke sweep), the
report and figure, and the reproduction of the session's smoke sweep (slow)."""
import os
import subprocess
import sys

import pandas as pd
import pytest

from fusionlab.analysis.report import reproduction as R
from fusionlab.analysis.report.reproduction import verdict as V
from fusionlab.analysis.report.reproduction.measure import Sweep
from test_workflow import smoke   # noqa: F401  (the session's smoke sweep)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# --- claims file and evaluation ---------------------------------------------------------

def test_claims_file():
    claims = R.load_claims()
    ids = [c["id"] for c in claims]
    assert len(ids) == len(set(ids)) >= 10
    for c in claims:
        assert c["published"].get("hardware") and "line" in c["source"]


def _tables(device="cuda"):
    """speedups.csv / runs.csv rows of an H100 zoo sweep (benchmarks/results/h100-zoo), as written."""
    rows = [  # model, variant, batch, size, wall ms, speedup, kernels
        ("pointwise_heavy", "eager", 1024, "default", 0.529, 1.0, 35),
        ("pointwise_heavy", "compile", 1024, "default", 0.156, 3.40, 1),
        ("matmul_heavy", "eager", 1024, "default", 2.757, 1.0, 8),
        ("matmul_heavy", "compile", 1024, "default", 2.813, 0.980, 8),
        ("mlp", "eager", 128, "default", 0.165, 1.0, 10),
        ("mlp", "compile", 128, "default", 0.378, 0.435, 8),
        ("gelu", "eager", 16384, "default", 7.80, 1.0, 9),
        ("gelu", "aten_op", 16384, "default", 0.718, 10.87, 1),
        ("gelu", "compile", 16384, "default", 0.726, 10.74, 1),
        ("gelu", "cuda_seed", 16384, "default", 1.677, 4.65, 1),
        ("gelu", "triton_seed", 16384, "default", 0.720, 10.84, 1),
        ("lstm_cell", "eager", 1024, "default", 0.570, 1.0, 13),
        ("lstm_cell", "cudnn_lstm", 1024, "default", 0.383, 1.49, 3),
        ("mlp_small", "eager", 128, "default", 0.140, 1.0, 5),
    ]
    sp = pd.DataFrame(rows, columns=["model", "variant", "batch", "size", "wall_time_per_iter_ms",
                                     "speedup_paired", "kernels_per_iter"])
    sp["mode"], sp["dtype"], sp["status"], sp["device"], sp["backend"] = "inference", "float32", "ok", device, "nsys"
    runs = sp.drop(columns=["speedup_paired"]).assign(
        gpu="NVIDIA H100 80GB HBM3", repeat=0, launch_api_us=6.99, median_kernel_us=1.66, short_kernel_share=1.0)
    costs = pd.DataFrame([dict(model="mlp_small", batch=128, mode="inference", dtype="float32", size="default",
                               bytes_unfused=199428)])
    return Sweep(runs, sp, costs)


def test_evaluate_gpu_tables():
    res = {r.claim["id"]: r for r in R.evaluate(R.load_claims(), _tables())}
    assert res["pointwise_10x"].verdict == V.FAILS                   # one process: the point decides
    assert res["matmul_1x"].verdict == V.HOLDS
    assert res["launches_35_to_1"].verdict == V.HOLDS
    assert res["launch_bound_kernels"].verdict == V.NOT_TESTED       # inference, not the text's training loop
    assert res["mlp_small_batch"].verdict == V.NOT_TESTED            # its own measurement (the batches) not here
    assert res["gelu_ordering"].verdict == V.FAILS                   # CUDA (double) 2.3x Triton: not "equal"
    assert res["lstm_cudnn_4x"].verdict == V.NOT_TESTED              # one step, not a sequence
    assert res["mlp_memory_traffic"].verdict == V.NOT_TESTED         # the cost model, not Nsight Compute
    assert res["deep_mlp_layers"].verdict == V.NOT_TESTED
    assert res["pointwise_10x"].plot["rows"][0][1:4] == (10.9, (10.9 / 1.5, 10.9 * 1.5), 3.40)


def test_cpu_sweep_says_what_needs_a_gpu(tmp_path):
    sweep = _tables(device="cpu")
    res = R.evaluate(R.load_claims(), sweep)
    gpu = {r.claim["id"] for r in res if r.verdict == V.NOT_ON_DEVICE}
    assert gpu == {c["id"] for c in R.load_claims() if c["needs"] == "gpu"}
    assert {r.claim["id"]: r.verdict for r in res}["launches_35_to_1"] == V.HOLDS
    md = R.markdown(res, sweep.hardware(), sweep.device)
    assert "This is a CPU run" in md and "| claim | source | published (hardware)" in md
    n = R.figure(res, sweep.hardware(), str(tmp_path / "f.png"), str(tmp_path / "f.svg"))
    assert n >= 1 and (tmp_path / "f.png").stat().st_size > 0 and (tmp_path / "f.svg").exists()


def test_nearest_batch_is_said():
    sweep = _tables()
    d, where = sweep.pick("mlp", ["eager", "compile"], 256, "default", "inference")
    assert set(d["batch"]) == {128} and "batch 128" in where


@pytest.mark.slow
@pytest.mark.smoke_reader
def test_reproduction_of_the_smoke_sweep(smoke, tmp_path):
    """What the reproduction rule writes for a CPU sweep (the smoke sweep's own tables):
    the GPU claims said so, the kernel-count claim judged. The target's DAG on its own
    CPU config builds without running it."""
    t = f"{smoke.res}/tables"
    out = R.write(f"{t}/runs.csv", f"{t}/speedups.csv", f"{t}/costs.csv", f"{smoke.res}/device/peaks.json",
                  f"{smoke.res}/runs", str(tmp_path / "reproduction.md"), str(tmp_path / "r.png"),
                  str(tmp_path / "r.svg"))
    verdicts = {r.claim["id"]: r.verdict for r in out}
    assert verdicts["launches_35_to_1"] in (V.HOLDS, V.NOT_TESTED)   # not tested at another batch or size
    assert {k for k, v in verdicts.items() if v == V.NOT_ON_DEVICE} == \
        {c["id"] for c in R.load_claims() if c["needs"] == "gpu"}
    md = (tmp_path / "reproduction.md").read_text()
    assert "needs a GPU" in md and (tmp_path / "r.png").stat().st_size > 0
    p = subprocess.run([sys.executable, "-m", "snakemake", "-n", "reproduction", "--configfile",
                        "config/reproduction-cpu.yaml", "--config", f"results={tmp_path / 'res'}"],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and "reproduction_report" in p.stdout, p.stdout[-2000:] + p.stderr[-2000:]
