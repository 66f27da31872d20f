"""Known-bytes oracles of the Nsight Compute step (docs/ncu.md), on a GPU with ncu:

    python benchmarks/ncu_oracles.py check --out DIR     # runs ncu itself, writes DIR/oracles.json

- big: one elementwise kernel (y = x * 2, fp32) reading N and writing N bytes, N far above
  L2 (1 GiB): its DRAM bytes are 2N within 2%.
- small: the same kernel on a working set far below L2 (1 MiB), repeated: after the first
  launch its DRAM bytes are near 0 (read and written in L2).
- range: the small kernel repeated inside one NVTX range, range replay: the range's bytes.
Each under `ncu --cache-control none --clock-control none`, only the kernels in the NVTX
range fusionlab@measure/ (the pipeline's settings, workflow/scripts/ncu_profile.py). The
reports are kept in DIR (oracle.ncu-rep is the test fixture: tests/test_ncu.py).

    python benchmarks/ncu_oracles.py workload --mib M --reps R   # the process ncu profiles
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

from fusionlab.analysis.readers import ncu_report
from fusionlab.core import ranges

TOLERANCE = 0.02


def workload(mib: int, reps: int) -> None:
    import nvtx
    import torch
    x = torch.randn(mib * (1 << 20) // 4, device="cuda")
    y = torch.empty_like(x)
    for _ in range(3):   # outside the range: allocator and caches as in a loop
        torch.mul(x, 2, out=y)
    torch.cuda.synchronize()
    with nvtx.annotate(ranges.MEASURE, domain=ranges.DOMAIN):
        for _ in range(reps):
            with nvtx.annotate(ranges.ITERATION, domain=ranges.DOMAIN):
                torch.mul(x, 2, out=y)
    torch.cuda.synchronize()


def run_ncu(ncu: str, out: str, replay: str, metrics: list[str], include: str, mib: int, reps: int) -> dict:
    cmd = [ncu, "--nvtx", "--nvtx-include", include, "--replay-mode", replay, "--cache-control", "none",
           "--clock-control", "none", "--metrics", ",".join(metrics), "--force-overwrite", "-o", out,
           sys.executable, os.path.abspath(__file__), "workload", "--mib", str(mib), "--reps", str(reps)]
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True)
    return {"rc": p.returncode, "seconds": round(time.monotonic() - t0, 2), "log_tail": (p.stdout + p.stderr)[-1500:],
            "rows": ncu_report.read(out + ".ncu-rep") if os.path.exists(out + ".ncu-rep") else []}


def check(out: str, ncu: str) -> dict:
    os.makedirs(out, exist_ok=True)
    res = {}
    big_mib = 1024
    big = run_ncu(ncu, f"{out}/big", "kernel", ncu_report.METRICS, f"{ranges.DOMAIN}@{ranges.MEASURE}/", big_mib, 2)
    n = big_mib * (1 << 20)
    rows = big.pop("rows")
    res["big"] = {**big, "bytes_per_tensor": n, "kernels": [
        {k: r[k] for k in ("dram_read_bytes", "dram_write_bytes", "l2_bytes", "ncu_time_ns", "flops")} for r in rows]}
    res["big"]["ratio_to_2N"] = [(r["dram_read_bytes"] + r["dram_write_bytes"]) / (2 * n) for r in rows]
    res["big"]["pass"] = bool(rows) and all(abs(x - 1) <= TOLERANCE for x in res["big"]["ratio_to_2N"])
    small = run_ncu(ncu, f"{out}/oracle", "kernel", ncu_report.METRICS, f"{ranges.DOMAIN}@{ranges.MEASURE}/", 1, 4)
    rows = small.pop("rows")
    m = 1 << 20
    res["small"] = {**small, "bytes_per_tensor": m, "kernels": [
        {k: r[k] for k in ("dram_read_bytes", "dram_write_bytes", "l2_bytes", "ncu_time_ns", "flops")} for r in rows]}
    later = [(r["dram_read_bytes"] + r["dram_write_bytes"]) / (2 * m) for r in rows[1:]]
    res["small"]["dram_over_2N_after_first"] = later
    res["small"]["pass"] = bool(later) and all(x < 0.05 for x in later)
    rng = run_ncu(ncu, f"{out}/oracle_range", "range", ncu_report.RANGE_METRICS,
                  f"{ranges.DOMAIN}@{ranges.ITERATION}/", 1, 4)
    rows = rng.pop("rows")
    res["range"] = {**rng, "ranges": [{k: r[k] for k in ("dram_read_bytes", "dram_write_bytes", "l2_bytes",
                                                           "ncu_time_ns")} for r in rows]}
    with open(f"{out}/oracles.json", "w") as f:
        json.dump(res, f, indent=1, default=float)
    return res


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("workload")
    w.add_argument("--mib", type=int, default=1)
    w.add_argument("--reps", type=int, default=4)
    c = sub.add_parser("check")
    c.add_argument("--out", required=True)
    c.add_argument("--ncu", default="ncu")
    a = p.parse_args(argv)
    if a.cmd == "workload":
        workload(a.mib, a.reps)
        return 0
    res = check(a.out, a.ncu)
    print(json.dumps({k: {kk: v[kk] for kk in ("rc", "seconds", "pass") if kk in v} for k, v in res.items()}))
    return 0 if res["big"]["pass"] and res["small"]["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
