"""The host probe: how fast the host's CPU was while a run timed its windows.

A host-bound configuration's wall time is the host's: Python, PyTorch's dispatcher and the
launch path. On a shared machine (a cloud VM whose cores a neighbour's threads share) that
speed changes by itself, within and between processes, and a host-bound GPU
configuration's process medians follow it (benchmarks/process_noise.py measures it;
docs/timing.md has what it found). Pinning does not change it; no process can.

So the runner measures it: before the first timing window and after each one it times
PROBE_PASSES passes of fixed CPU-only work (the same kind of work: 38 elementwise PyTorch
ops on 8 floats, no GPU, no arithmetic to speak of). `host_probe_ms` (ms per pass) is the
host's speed during the run, and runs of one sweep on one host compare by it (tables:
host_slowdown).
"""
from __future__ import annotations

import time

PROBE_PASSES = 20


def make_probe(torch, passes: int = PROBE_PASSES):
    """A callable timing `passes` passes of the probe's CPU work; it returns ms per pass."""
    x0 = torch.linspace(-1.0, 1.0, 8)
    scale, bias = torch.ones(8), torch.zeros(8)

    def one_pass(x):
        x = x * scale + bias
        for _ in range(3):
            x = torch.sin(x) + torch.cos(x) * torch.tanh(x)
            x = x * torch.sigmoid(x) + torch.relu(x)
            x = x / (1.0 + torch.abs(x))
        return x

    def probe() -> float:
        with torch.no_grad():
            t0 = time.perf_counter()
            for _ in range(passes):
                one_pass(x0)
            return (time.perf_counter() - t0) * 1e3 / passes
    probe()   # first call: allocator and dispatch caches
    return probe
