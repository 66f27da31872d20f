"""Nsight Compute fixtures of known work for tests/test_ncu_fields.py, on a GPU with ncu:

    python benchmarks/gpu/ncu_fixtures.py --out tests/data/ncu_h100_fp16

One process, kernel replay under the pipeline's settings (`--cache-control none
--clock-control none`, the metrics of fusionlab/analysis/readers/ncu_report.py, the
kernels in the NVTX range fusionlab@measure/), three Triton kernels of known FLOPs on
N = 1 Mi elements each: fp16 `x * y + z` (N fmas on the fp16 pipe), fp16 `x + y` (N adds),
fp32 `x * y + z` (N fmas on the fp32 pipe); each kernel's arithmetic is in its dtype.
Writes into --out:

- fixture.ncu-rep.gz: the report (gzipped);
- fixture_raw.csv: `ncu --import R --csv --page raw --print-kernel-base demangled
  --print-units base`;
- fixture_raw_auto.csv: the same with ncu's default units (`--print-units auto`: Kbyte,
  usecond, ...);
- work.json: each kernel's elements, dtype and operation, and the tools' versions.

    python benchmarks/gpu/ncu_fixtures.py workload   # the process ncu profiles

The roofs fixture (tests/test_roofs.py: the GPU's peak rates against its datasheet):

    python benchmarks/gpu/ncu_fixtures.py roofs --out tests/data/ncu_h100_roofs

the roofline pass's settings (core.ncu_passes.PASSES["roofline"]: kernel replay, caches
flushed, ROOFLINE_METRICS with the peak-sustained metrics, clocks free) on the fp32 fma
kernel and a bf16 4096 x 4096 matmul (tensor cores); writes roofs.ncu-rep.gz,
roofs_raw.csv (base units), and roofs.json (the tools' versions and `ncu
--query-metrics-mode suffix` of each roof metric's base name on this GPU's chip: the
names this ncu knows).

    python benchmarks/gpu/ncu_fixtures.py roofs-workload   # the process ncu profiles
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys

N = 1 << 20
KERNELS = [("fma", "float16"), ("add", "float16"), ("fma", "float32")]


def workload() -> None:
    import nvtx
    import torch
    import triton
    import triton.language as tl

    from fusionlab.core import ranges

    @triton.jit
    def fma_kernel(x, y, z, out, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out + offs, tl.load(x + offs, mask=m) * tl.load(y + offs, mask=m) + tl.load(z + offs, mask=m),
                 mask=m)

    @triton.jit
    def add_kernel(x, y, out, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)

    def launch(op, dtype):
        t = [torch.randn(N, device="cuda", dtype=getattr(torch, dtype)) for _ in range(4)]
        grid = (triton.cdiv(N, 1024),)
        if op == "fma":
            fma_kernel[grid](t[0], t[1], t[2], t[3], N, BLOCK=1024)
        else:
            add_kernel[grid](t[0], t[1], t[3], N, BLOCK=1024)

    for op, dtype in KERNELS:       # compiled outside the range
        launch(op, dtype)
    torch.cuda.synchronize()
    with nvtx.annotate(ranges.MEASURE, domain=ranges.DOMAIN):
        for op, dtype in KERNELS:
            launch(op, dtype)
    torch.cuda.synchronize()


def roofs_workload() -> None:
    import nvtx
    import torch

    from fusionlab.core import ranges
    a, b = (torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    x, y, z = (torch.randn(N, device="cuda") for _ in range(3))
    for _ in range(2):               # cuBLAS's heuristics and the allocator outside the range
        torch.mm(a, b)
        torch.addcmul(z, x, y)
    torch.cuda.synchronize()
    with nvtx.annotate(ranges.MEASURE, domain=ranges.DOMAIN):
        torch.mm(a, b)
        torch.addcmul(z, x, y)
    torch.cuda.synchronize()


def _versions(ncu: str) -> dict:
    import torch
    import triton
    version = subprocess.run([ncu, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    return {"ncu": version, "torch": torch.__version__, "triton": triton.__version__,
            "gpu": torch.cuda.get_device_name(0)}


def record_roofs(out: str, ncu: str) -> dict:
    from fusionlab.core import ncu_passes
    p = ncu_passes.PASSES["roofline"]
    os.makedirs(out, exist_ok=True)
    rep = os.path.join(out, "roofs")
    cmd = [ncu, "--nvtx", "--nvtx-include", p.nvtx_include, "--replay-mode", p.replay, "--cache-control",
           p.cache_control, "--clock-control", "none", "--metrics", ",".join(p.metrics), "--force-overwrite",
           "-o", rep, sys.executable, os.path.abspath(__file__), "roofs-workload"]
    subprocess.run(cmd, check=True)
    text = subprocess.run([ncu, "--import", rep + ".ncu-rep", "--csv", "--page", "raw", "--print-kernel-base",
                           "demangled", "--print-units", "base"], check=True, capture_output=True, text=True).stdout
    with open(os.path.join(out, "roofs_raw.csv"), "w") as f:
        f.write(text)
    with open(rep + ".ncu-rep", "rb") as src, gzip.open(rep + ".ncu-rep.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    os.remove(rep + ".ncu-rep")
    bases = sorted({m.split(".")[0] for m in ncu_passes.ROOF_METRICS})
    query = subprocess.run([ncu, "--query-metrics", "--query-metrics-mode", "suffix", "--metrics", ",".join(bases)],
                           capture_output=True, text=True)
    info = {**_versions(ncu), "command": " ".join(cmd[:-3]), "roof_metrics": list(ncu_passes.ROOF_METRICS),
            "query_metrics": (query.stdout + query.stderr)[-20000:]}
    with open(os.path.join(out, "roofs.json"), "w") as f:
        json.dump(info, f, indent=1)
    return {k: v for k, v in info.items() if k != "query_metrics"}


def record(out: str, ncu: str) -> dict:
    import torch
    import triton

    from fusionlab.analysis.readers import ncu_report
    from fusionlab.core import ranges
    os.makedirs(out, exist_ok=True)
    rep = os.path.join(out, "fixture")
    cmd = [ncu, "--nvtx", "--nvtx-include", f"{ranges.DOMAIN}@{ranges.MEASURE}/", "--replay-mode", "kernel",
           "--cache-control", "none", "--clock-control", "none", "--metrics", ",".join(ncu_report.METRICS),
           "--force-overwrite", "-o", rep, sys.executable, os.path.abspath(__file__), "workload"]
    subprocess.run(cmd, check=True)
    for name, units in (("fixture_raw.csv", "base"), ("fixture_raw_auto.csv", "auto")):
        text = subprocess.run([ncu, "--import", rep + ".ncu-rep", "--csv", "--page", "raw", "--print-kernel-base",
                               "demangled", "--print-units", units], check=True, capture_output=True, text=True).stdout
        with open(os.path.join(out, name), "w") as f:
            f.write(text)
    with open(rep + ".ncu-rep", "rb") as src, gzip.open(rep + ".ncu-rep.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    os.remove(rep + ".ncu-rep")
    version = subprocess.run([ncu, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    work = {"elements": N, "kernels": [{"op": op, "dtype": dtype} for op, dtype in KERNELS],
            "ncu": version, "torch": torch.__version__, "triton": triton.__version__,
            "gpu": torch.cuda.get_device_name(0)}
    with open(os.path.join(out, "work.json"), "w") as f:
        json.dump(work, f, indent=1)
    return work


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("cmd", nargs="?", default="record", choices=["record", "workload", "roofs", "roofs-workload"])
    p.add_argument("--out", default="tests/data/ncu_h100_fp16")
    p.add_argument("--ncu", default=shutil.which("ncu") or "/usr/local/cuda/bin/ncu")
    a = p.parse_args(argv)
    if a.cmd == "workload":
        workload()
        return 0
    if a.cmd == "roofs-workload":
        roofs_workload()
        return 0
    if a.cmd == "roofs":
        print(json.dumps(record_roofs(a.out, a.ncu)))
        return 0
    print(json.dumps(record(a.out, a.ncu)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
