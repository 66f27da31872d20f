"""Which Nsight Compute counters count a GEMM's tensor-core FLOPs on this GPU (GPU machine).

The oracle: a square `torch.mm` of size N does 2 N^3 floating-point operations. For bf16,
fp16 and tf32 (float32 with TF32 on) the probe profiles that one matmul inside an NVTX
range `probe` with every counter this ncu lists for the chip whose name holds `tensor`,
`mma` or `gmma` (as `.sum`), plus the kernel's duration, and writes each counter's value
divided by 2 N^3 (a counter that counts FLOPs reads 1; one that counts instructions reads
1 / FLOPs per instruction):

    python benchmarks/gpu/tensor_counters.py --out OUTDIR          # OUTDIR/tensor_counters.json, raw CSVs
    python benchmarks/gpu/tensor_counters.py workload --dtype bf16  # the process ncu profiles
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys

N = 4096
DTYPES = ("bf16", "fp16", "tf32")


def workload(dtype: str) -> None:
    import torch
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    t = {"bf16": torch.bfloat16, "fp16": torch.float16, "tf32": torch.float32}[dtype]
    a, b = (torch.randn(N, N, device="cuda", dtype=t) for _ in range(2))
    for _ in range(2):               # cuBLAS's heuristics and the allocator outside the range
        torch.mm(a, b)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push("probe")
    torch.mm(a, b)
    torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()


def candidate_metrics(ncu: str) -> list[str]:
    """Every `.sum` counter this ncu knows on this GPU whose name holds tensor, mma or gmma."""
    from fusionlab.jobs import ncu_step
    bases = sorted(m for m in ncu_step.known_metrics(ncu) if re.search(r"tensor|mma", m))
    suffixes = subprocess.run([ncu, "--query-metrics", "--query-metrics-mode", "suffix", "--metrics",
                               ",".join(bases)], capture_output=True, text=True).stdout
    known = set(re.findall(r"[a-z0-9]+__[a-z0-9_]+\.sum\b", suffixes))
    return [b + ".sum" for b in bases if b + ".sum" in known] or [b + ".sum" for b in bases]


def profile(ncu: str, dtype: str, metrics: list[str], out: str) -> list[dict]:
    rep = os.path.join(out, f"probe_{dtype}")
    cmd = [ncu, "--nvtx", "--nvtx-include", "probe/", "--cache-control", "none", "--clock-control", "none",
           "--metrics", ",".join(["gpu__time_duration.sum", *metrics]), "--force-overwrite", "-o", rep,
           sys.executable, os.path.abspath(__file__), "workload", "--dtype", dtype]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"ncu failed on {dtype}: {(run.stdout + run.stderr)[-600:]}")
    text = subprocess.run([ncu, "--import", rep + ".ncu-rep", "--csv", "--page", "raw", "--print-units", "base"],
                          check=True, capture_output=True, text=True).stdout
    with open(os.path.join(out, f"probe_{dtype}_raw.csv"), "w") as f:
        f.write(text)
    rows = list(csv.DictReader(io.StringIO(text)))
    return [r for r in rows if r.get("ID", "").strip().isdigit()]


def _per(value, flops: int):
    """A counter's value over the matmul's FLOPs (the text as read where it is no number)."""
    try:
        return float(str(value).replace(",", "")) / flops
    except ValueError:
        return value


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("cmd", nargs="?", default="probe", choices=["probe", "workload"])
    p.add_argument("--dtype", default="bf16", choices=DTYPES)
    p.add_argument("--out", default="tensor_counters")
    p.add_argument("--ncu", default=shutil.which("ncu") or "/usr/local/cuda/bin/ncu")
    a = p.parse_args(argv)
    if a.cmd == "workload":
        workload(a.dtype)
        return 0
    os.makedirs(a.out, exist_ok=True)
    metrics = candidate_metrics(a.ncu)
    flops = 2 * N ** 3
    result = {"n": N, "flops": flops, "metrics": metrics, "kernels": {}}
    for dtype in DTYPES:
        try:
            rows = profile(a.ncu, dtype, metrics, a.out)
        except RuntimeError as e:     # one bad name fails the whole list: try the counters alone
            print(e, file=sys.stderr)
            rows, good = [], []
            for m in metrics:
                try:
                    profile(a.ncu, dtype, [m], a.out)
                    good.append(m)
                except RuntimeError:
                    pass
            metrics = good
            result["metrics"] = good
            rows = profile(a.ncu, dtype, metrics, a.out) if good else []
        result["kernels"][dtype] = [
            {"name": r.get("Kernel Name", "")[:120], "time_ns": r.get("gpu__time_duration.sum"),
             "per_flop": {m: _per(r.get(m), flops) for m in metrics}} for r in rows]
    with open(os.path.join(a.out, "tensor_counters.json"), "w") as f:
        json.dump(result, f, indent=1)
    for dtype, ks in result["kernels"].items():
        for k in ks:
            near = {m: round(v, 6) for m, v in k["per_flop"].items() if isinstance(v, float) and v > 0}
            print(dtype, k["name"][:60], k["time_ns"], json.dumps(near))
    return 0


if __name__ == "__main__":
    sys.exit(main())
