"""The device's measured ceilings, once per sweep, for the roofline:

- copy_bandwidth_Bps: device-to-device copy y.copy_(x) of a large buffer (bytes read +
  written per second, as docs/metrics.md's anchors define it).
- matmul_flops: the FLOP rate of a large square matmul in the sweep's dtype.

Median of timed repetitions after warm-up; CUDA events on the GPU, perf_counter on the
CPU. No profiler runs: these are the ceilings, not experiments.

    python -m fusionlab.jobs.peaks --device cuda --dtype float32 --out peaks.json
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

from fusionlab.core.axes import DTYPES, compute_dtype


def _time(torch, fn, device: str, reps: int) -> float:
    """Median seconds per call."""
    for _ in range(3):
        fn()
    times = []
    for _ in range(reps):
        if device == "cuda":
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record(); fn(); b.record(); b.synchronize()
            times.append(a.elapsed_time(b) / 1e3)
        else:
            t0 = time.perf_counter(); fn(); times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _time_op(torch, op, shape, dtype, device: str, reps: int) -> float:
    """Median seconds of op(a, b) on two fresh random tensors (freed on return)."""
    a = torch.rand(shape, dtype=dtype, device=device)
    b = torch.rand(shape, dtype=dtype, device=device)
    return _time(torch, lambda: op(a, b), device, reps)


def measure(device: str = "auto", dtype: str = "float32", copy_mib: int | None = None,
            matmul_n: int | None = None, reps: int = 20) -> dict:
    import torch
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    cuda = device == "cuda"
    copy_mib = copy_mib or (1024 if cuda else 64)
    matmul_n = matmul_n or (8192 if cuda else 512)
    dt = getattr(torch, compute_dtype(dtype))
    nbytes = 2 * copy_mib * 2**20   # read + written
    t_copy = _time_op(torch, lambda x, y: y.copy_(x), (copy_mib * 2**20 // 4,), torch.float32, device, reps)
    t_mm = _time_op(torch, lambda a, b: a @ b, (matmul_n, matmul_n), dt, device, reps)
    return {"device": device,
            "name": torch.cuda.get_device_name(0) if cuda else "cpu",
            "dtype": dtype, "copy_bytes": nbytes, "copy_s": t_copy,
            "copy_bandwidth_Bps": nbytes / t_copy,
            "matmul_n": matmul_n, "matmul_s": t_mm, "matmul_flops": 2 * matmul_n ** 3 / t_mm,
            "torch": torch.__version__}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m fusionlab.jobs.peaks", description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="auto", choices=["auto", "cuda", "cpu"])
    p.add_argument("--dtype", default="float32", choices=DTYPES)
    p.add_argument("--out", help="write JSON here (atomically) instead of stdout")
    p.add_argument("--slots", help="the sweep's GPU slots (jobs.slots): measure holding one")
    a = p.parse_args(argv)
    import contextlib
    import os
    from fusionlab.jobs import slots
    with contextlib.ExitStack() as held:
        if a.slots and a.device == "cuda" and not os.environ.get("SLURM_JOB_ID"):
            slot = slots.claim(slots.parse_slots(a.slots))
            os.environ["CUDA_VISIBLE_DEVICES"] = slot.gpu
            held.callback(slots.release_claim, slot)
            held.enter_context(slots.hold(slot))
        res = measure(a.device, a.dtype)
    if a.out:
        from fusionlab.core.io import write_json_atomic
        write_json_atomic(a.out, res)
    else:
        print(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
