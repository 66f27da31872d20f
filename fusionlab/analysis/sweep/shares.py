"""Where an iteration's time goes, against the untraced wall time: the GPU's kernel time
and the idle time around it, split as HTA splits idle time, with the wall time of the
loop no profiler traced.

Tracing adds host time to every CUDA API call (1.2x to 2.9x the wall time of a
host-bound loop under nsys), so busy and idle shares of the traced iterations overstate
the idle time. Kernel durations are the GPU's own and tracing leaves them as they are,
so the split takes them from the traced iterations and the wall time from the untraced
loop. Per run, or per configuration from its medians (split):

- wall_ms:        untraced wall time per iteration (wall_time_per_iter_ms).
- kernel_ms:      time the GPU ran a kernel per iteration (gpu_busy_per_iter_ms: kernels
                  that overlap count once; else the summed kernel time; on the CPU
                  backend the outermost operators' time), from the traced iterations.
- kernel_wait_ms, other_ms: HTA's kernel-wait and other idle time per iteration (gaps
                  between already-queued kernels; the final synchronize), from the traced
                  iterations, each capped at the idle time left.
- host_ms:        exposed host time: the rest of the untraced idle time, wall - kernel -
                  kernel wait - other (clipped at 0): the GPU waiting on the host (Python,
                  dispatch, launch calls). It equals the traced host wait less the
                  profiler's own cost (traced - untraced wall time), clipped at 0.
- kernel_share, host_share, kernel_wait_share, other_share: each / wall_ms (they add up
                  to 1).
- bound:          "host" where host_ms exceeds kernel_ms, else "gpu" (metrics' `bound`
                  rule with the untraced idle time).
- host_per_launch_us: host_ms per launch call (launch_calls_per_iter).
On the CPU backend (host and operators on one processor): host_ms = wall - operator
time, no waits, and no `bound`.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

PARTS = ("kernel_ms", "host_ms", "kernel_wait_ms", "other_ms")
SHARES = {"kernel_ms": "kernel_share", "host_ms": "host_share", "kernel_wait_ms": "kernel_wait_share",
          "other_ms": "other_share"}
LABELS = {"kernel_ms": "GPU kernel time", "host_ms": "exposed host time", "kernel_wait_ms": "kernel wait",
          "other_ms": "other idle (final synchronize)"}


def _col(df: pd.DataFrame, name: str) -> pd.Series:
    return pd.to_numeric(df[name], errors="coerce") if name in df else pd.Series(np.nan, index=df.index)


def inputs(runs: pd.DataFrame) -> pd.DataFrame:
    """The per-run quantities the split starts from: wall_ms, kernel_ms, kernel_wait_ms,
    other_ms (traced), launches_per_iter, cpu (a CPU-backend run)."""
    cpu = runs["device"].astype(str).eq("cpu") if "device" in runs else pd.Series(False, index=runs.index)
    gpu = _col(runs, "gpu_busy_per_iter_ms").fillna(_col(runs, "gpu_time_per_iter_ms"))
    return pd.DataFrame({
        "wall_ms": _col(runs, "wall_time_per_iter_ms"),
        "kernel_ms": gpu.where(~cpu, _col(runs, "cpu_kernel_time_per_iter_ms")),
        "kernel_wait_ms": _col(runs, "idle_kernel_wait_per_iter_ms").where(~cpu, 0.0),
        "other_ms": _col(runs, "idle_other_per_iter_ms").where(~cpu, 0.0),
        "launches_per_iter": _col(runs, "launch_calls_per_iter"),
        "cpu": cpu}, index=runs.index)


def split(q: pd.DataFrame) -> pd.DataFrame:
    """The split (module doc) of quantities q (columns of inputs(), per run or medians)."""
    wall, kernel = q["wall_ms"], q["kernel_ms"]
    idle = (wall - kernel).clip(lower=0)
    kw = q["kernel_wait_ms"].fillna(0).clip(lower=0)
    kw = np.minimum(kw, idle)
    other = np.minimum(q["other_ms"].fillna(0).clip(lower=0), idle - kw)
    host = (idle - kw - other).clip(lower=0)
    out = pd.DataFrame({"wall_ms": wall, "kernel_ms": np.minimum(kernel, wall), "host_ms": host,
                        "kernel_wait_ms": kw, "other_ms": other}, index=q.index)
    known = wall.notna() & kernel.notna()
    out.loc[~known, list(PARTS)] = np.nan
    for part, share in SHARES.items():
        out[share] = out[part] / wall.where(wall > 0)
    cpu = q["cpu"].astype(bool) if "cpu" in q else pd.Series(False, index=q.index)
    out["bound"] = np.where(~known | cpu, None, np.where(host > out["kernel_ms"], "host", "gpu"))
    launches = q["launches_per_iter"] if "launches_per_iter" in q else pd.Series(np.nan, index=q.index)
    out["host_per_launch_us"] = out["host_ms"] * 1e3 / launches.where(launches > 0)
    return out


def per_run(runs: pd.DataFrame) -> pd.DataFrame:
    """split() of every run (index as runs)."""
    return split(inputs(runs))
