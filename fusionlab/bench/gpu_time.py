"""Timing of GPU work for the kernel benchmarks (benchmarks/kernels_backward.py and
benchmarks/kernels_backward_tune.py): the GPU's own time of a call, the CPU's time per
call, the device-to-device copy bandwidth they are scaled by, and a CSV writer.
"""
from __future__ import annotations

import csv
import statistics
import time

import torch

DEVICE = "cuda"
SPIN_CYCLES = 4_000_000    # torch.cuda._sleep: about 2 ms of the GPU at 2 GHz
_FLUSH = []


def gpu_time(fn, reps=30, warmup=3):
    """Median GPU time (ms) of fn: before each call the L2 is flushed (a 256 MiB memset) and
    the GPU spins about 2 ms (torch.cuda._sleep), in which the CPU queues all of fn's
    launches; so the time between the events around fn is the GPU's alone."""
    if not _FLUSH:
        _FLUSH.append(torch.empty(256 * 2**20, dtype=torch.int8, device=DEVICE))
    for _ in range(warmup):
        fn()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    for start, end in events:
        _FLUSH[0].zero_()
        torch.cuda._sleep(SPIN_CYCLES)
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in events)


def do_bench(fn, warmup=25, rep=80):
    """Triton's do_bench median (ms): it times the CPU's launches too where the CPU falls
    behind the GPU."""
    from triton.testing import do_bench as triton_do_bench
    return triton_do_bench(fn, warmup=warmup, rep=rep, return_mode="median")


def cpu_time(fn, n=20):
    """The CPU's time (ms) per call of fn, its launches queued without waiting for the GPU."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    ms = (time.perf_counter() - t0) / n * 1e3
    torch.cuda.synchronize()
    return ms


def copy_bandwidth():
    """(bytes/s, ms) of the device-to-device copy y.copy_(x) of 1 GiB of fp32, bytes read +
    written, timed by gpu_time."""
    x = torch.empty(2**28, device=DEVICE, dtype=torch.float32).uniform_()
    y = torch.empty_like(x)
    ms = gpu_time(lambda: y.copy_(x))
    return 2 * 2**28 * 4 / (ms * 1e-3), ms


def write_csv(path, rows) -> None:
    """rows (dicts) as a CSV with the union of their keys, sorted; nothing without a path."""
    if not path:
        return
    keys = sorted({k for r in rows for k in r})
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
