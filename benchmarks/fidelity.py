"""Measurement fidelity of the pipeline, measured side by side in one run (GPU machine).

1. GPU time per iteration that the pipeline reports (nsys, kernels inside the measured
   NVTX range) against triton.testing.do_bench (median, CUDA events, L2 flushed) of the
   same model, variant and input. Target: within 5%.
2. The runner's own wall time per iteration under nsys (from the sweep) against the same
   run without any profiler. Target: within 10%.

    python benchmarks/fidelity.py --runs results/tables/runs.csv --batch 1024
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def do_bench_ms(model_name, variant_name, batch, dtype="float32"):
    import torch
    import triton.testing
    from experiments.registry import MODELS, VARIANTS
    torch.manual_seed(0)
    model, inputs = MODELS[model_name].build(batch, getattr(torch, dtype), "cuda")
    model.eval()
    fn = VARIANTS[variant_name].apply(model, inputs, {"compile_mode": "default"})
    with torch.no_grad():
        for _ in range(3):
            fn(*inputs)
        torch.cuda.synchronize()
        return triton.testing.do_bench(lambda: fn(*inputs), warmup=100, rep=500, return_mode="median")


def unprofiled_wall_ms(model, variant, batch, warmup, iters):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "run.json")
        subprocess.run([sys.executable, "-m", "experiments.run", "--model", model, "--variant", variant,
                        "--batch", str(batch), "--warmup", str(warmup), "--iters", str(iters),
                        "--profiler", "none", "--out", out], check=True)
        with open(out) as f:
            return json.load(f)["timing"]["wall_time_per_iter_ms"]


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--runs", required=True)
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--models", default="pointwise_heavy,matmul_heavy")
    p.add_argument("--variants", default="eager,compile")
    p.add_argument("--out")
    a = p.parse_args(argv)
    runs = pd.read_csv(a.runs)
    rows = []
    for model in a.models.split(","):
        for variant in a.variants.split(","):
            sel = runs[(runs.model == model) & (runs.variant == variant) & (runs.batch == a.batch)
                       & (runs.status == "ok") & (runs.backend == "nsys")]
            if sel.empty:
                print(f"no ok nsys run for {model}/{variant}/bs{a.batch} in {a.runs}")
                continue
            r = sel.iloc[0]
            bench = do_bench_ms(model, variant, a.batch)
            bare = unprofiled_wall_ms(model, variant, a.batch, int(r.get("warmup_iters", 50) or 50),
                                      int(r.measure_iters))
            rows.append(dict(model=model, variant=variant, batch=a.batch,
                             pipeline_gpu_ms=r.gpu_time_per_iter_ms, do_bench_ms=bench,
                             gpu_ratio=r.gpu_time_per_iter_ms / bench,
                             nsys_wall_ms=r.runner_wall_time_per_iter_ms, bare_wall_ms=bare,
                             wall_ratio=r.runner_wall_time_per_iter_ms / bare))
    df = pd.DataFrame(rows)
    if a.out:
        df.to_csv(a.out, index=False)
    pd.set_option("display.width", 200)
    print(df.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    ok = bool(len(df)) and (df.gpu_ratio.sub(1).abs() <= 0.05).all() and (df.wall_ratio.sub(1).abs() <= 0.10).all()
    print("fidelity targets (gpu within 5%, wall within 10%):", "MET" if ok else "NOT MET")
    return 0


if __name__ == "__main__":
    sys.exit(main())
