"""Measurement fidelity of the pipeline, measured side by side in one run (GPU machine).

For each workload (model x variant at one batch size):
1. GPU time per iteration as the pipeline reports it (the runner under the pipeline's
   `nsys profile` flags, the SQLite export read by analysis.run.metrics: summed kernel time
   in the measured NVTX range / iterations) against
   - triton.testing.do_bench (median of CUDA-event times per call, L2 flushed before
     each call, host launch gaps included), and
   - triton.testing.do_bench_cudagraph (median, calls replayed back to back from a CUDA
     graph: no host overhead, warm L2), the like-for-like reference for summed kernel time.
   Target: within 5%.
2. The runner's own wall time per iteration under nsys against the same run with no
   profiler, for the pipeline's trace set and for smaller ones (which part of the
   tracing costs what). Target: within 10%.

    python benchmarks/fidelity.py --batch 1024 --out fidelity.csv
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import pandas as pd
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # the repository


def bench(model_name, variant_name, batch):
    import torch
    import triton.testing
    from fusionlab.experiments.registry import MODELS, VARIANTS
    torch.manual_seed(0)
    model, inputs = MODELS[model_name].build(batch, torch.float32, "cuda")
    model.eval()
    fn = VARIANTS[variant_name].apply(model, inputs, {"compile_mode": "default"})
    with torch.no_grad():
        for _ in range(5):
            fn(*inputs)
        torch.cuda.synchronize()
        a = triton.testing.do_bench(lambda: fn(*inputs), warmup=100, rep=500, return_mode="median")
        b = triton.testing.do_bench_cudagraph(lambda: fn(*inputs), rep=500, return_mode="median")
    return a, b


def runner(model, variant, batch, warmup, iters, trace=None, extra="", workdir="."):
    out = os.path.join(workdir, "run.json")
    cmd = [sys.executable, "-m", "fusionlab.runner", "--model", model, "--variant", variant,
           "--batch", str(batch), "--warmup", str(warmup), "--iters", str(iters),
           "--profiler", "nsys" if trace else "none", "--out", out]
    if trace:
        rep = os.path.join(workdir, "r")
        cmd = ["nsys", "profile", "-t", trace, *extra.split(), "--force-overwrite", "true", "-o", rep] + cmd
    subprocess.run(cmd, check=True, cwd=ROOT, capture_output=True)
    with open(out) as f:
        wall = json.load(f)["timing"]["wall_time_per_iter_ms"]
    gpu = None
    if trace and "cuda" in trace and "nvtx" in trace:
        from fusionlab.analysis.run import metrics
        from fusionlab.analysis.readers import nsys_sqlite
        subprocess.run(["nsys", "export", "--type", "sqlite", "--force-overwrite", "true",
                        "-o", rep + ".sqlite", rep + ".nsys-rep"], check=True, capture_output=True)
        gpu = metrics.range_metrics(nsys_sqlite.scan(rep + ".sqlite"), "measure")["gpu_time_per_iter_ms"]
    return wall, gpu


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--models", default="pointwise_heavy,matmul_heavy")
    p.add_argument("--variants", default="eager,compile")
    p.add_argument("--out")
    a = p.parse_args(argv)
    with open(os.path.join(ROOT, "config.yaml")) as f:
        cfg = yaml.safe_load(f)
    trace, extra = cfg["nsys"]["trace"], cfg["nsys"]["args"]
    warmup, iters = cfg["warmup_iters"], cfg["measure_iters"]
    rows = []
    for model in a.models.split(","):
        for variant in a.variants.split(","):
            with tempfile.TemporaryDirectory() as d:
                bare, _ = runner(model, variant, a.batch, warmup, iters, workdir=d)
                full, gpu = runner(model, variant, a.batch, warmup, iters, trace, extra, d)
                cuda_only, _ = runner(model, variant, a.batch, warmup, iters, "cuda", extra, d)
                nvtx_only, _ = runner(model, variant, a.batch, warmup, iters, "nvtx", extra, d)
            db, dbg = bench(model, variant, a.batch)
            rows.append(dict(model=model, variant=variant, batch=a.batch, pipeline_gpu_ms=gpu,
                             do_bench_ms=db, do_bench_cudagraph_ms=dbg,
                             gpu_vs_do_bench=gpu / db, gpu_vs_cudagraph=gpu / dbg,
                             bare_wall_ms=bare, nsys_wall_ms=full, wall_ratio=full / bare,
                             wall_ratio_cuda_only=cuda_only / bare, wall_ratio_nvtx_only=nvtx_only / bare))
            print(rows[-1], flush=True)
    df = pd.DataFrame(rows)
    if a.out:
        df.to_csv(a.out, index=False)
    pd.set_option("display.width", 250)
    print(f"nsys flags: -t {trace} {extra}; warm-up {warmup}, measured {iters}")
    print(df.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    within = lambda s, tol: bool((s.sub(1).abs() <= tol).all())  # noqa: E731
    print(f"GPU time within 5% of do_bench: {within(df.gpu_vs_do_bench, .05)}; "
          f"of do_bench_cudagraph: {within(df.gpu_vs_cudagraph, .05)}; "
          f"wall time under nsys within 10%: {within(df.wall_ratio, .10)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
