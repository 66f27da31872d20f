"""Per-range metrics of a profile: a streamed nsys export (nsys_sqlite.Report) or a
normalised Trace (torch.profiler traces, reports loaded in memory). Both are read by one
implementation, analysis.run.stream, in one pass (a Trace through trace.Chunks);
analysis.run.fields turns its aggregates into the fields below.

Definitions (the report's captions repeat them):
- a kernel belongs to a range if the API call that launched it lies inside the range's
  time window, by one of two attribution rules:
  - `process` (the pipeline's own runs): a call of any thread of the range's process.
    PyTorch launches the backward pass from autograd's device thread and CUDA graphs
    replay from a graph launch, so only this rule counts a training step's kernels.
  - `same_thread`: a call of the thread that opened the range (nsys nvtx_gpu_proj_trace).
  A launch call likewise.
- iterations: the ITERATION ranges nested in the range (else the range's instances).
- wall_time_per_iter_ms: summed range duration / iterations (the measure range ends
  after a device synchronize, so this is host-observed time per iteration).
- gpu_time_per_iter_ms: summed kernel duration (end - start) / iterations (the Total
  Time of cuda_gpu_kern_sum restricted to the range).
- kernels_per_iter, launch_calls_per_iter: counts / iterations.
- launch_overhead_ratio: summed launch-API duration / summed kernel duration.
- gpu_busy_fraction: union of the range's kernel intervals, clipped to the range,
  over the range duration (1 - HTA's idle share of the range).
- gpu_busy_per_iter_ms: that union / iterations: the time the GPU ran any kernel. It is
  gpu_time_per_iter_ms when kernels never overlap, less when they do (cuDNN's LSTM runs
  kernels on several streams at once).
- gpu_span_per_iter_ms: first kernel start to last kernel end / iterations
  (nvtx_gpu_proj_trace's projected duration).
- median_kernel_us, p10_kernel_us, p90_kernel_us: kernel duration percentiles.

Launch path, per kernel (cuda_kern_exec_trace, join of launch call and kernel on the
correlation id), reported as medians over the range's kernels:
- launch_api_us: API Dur = call end - call start.
- queue_us: Queue Dur = kernel start - call end (negative values dropped, as nsys does).
- launch_delay_us: HTA's launch delay = kernel start - call end, clipped at 0 (the
  median of the clipped values, so it is 0 when most kernels start before their call
  returns).
- short_kernel_share: HTA's short kernels: kernel duration < its launch call's duration
  and the call <= 50 us; the share of the range's kernels that are short.

GPU idle time inside the range (HTA's idle breakdown, applied per range instance on
the merged kernel timeline): each gap before a kernel (from the range start or the end
of the previous kernel) is
- host wait if the kernel's launch call started after the previous kernel ended (the
  GPU ran dry waiting for the CPU);
- kernel wait if not, and the gap is at most KERNEL_WAIT_US (GPU-side launch latency
  between queued kernels);
- other otherwise; the tail from the last kernel's end to the range end (the final
  synchronize) is other too.
idle_{host_wait,kernel_wait,other}_per_iter_ms and *_frac (share of the range); the
three add up to 1 - gpu_busy_fraction.
- bound: "cpu" when the GPU waits on the host for more of the range than it computes
  (idle_host_wait_frac > gpu_busy_fraction), else "gpu".
"""
from __future__ import annotations

from fusionlab.analysis.run import stream
from fusionlab.analysis.run.fields import (ATTRIBUTIONS, KERNEL_TABLE_COLUMNS, KERNEL_WAIT_US,  # noqa: F401
                                           RESOURCE_TABLE_COLUMNS, SHORT_CALL_US, clean, key, launch_configs,
                                           range_keys, with_resources)
from fusionlab.core import ranges as R


def views(trace, targets=None, attributions=ATTRIBUTIONS, tables=()) -> tuple[dict, dict]:
    """Metrics of ranges `targets` ((name, domain) pairs; None: every range name) under each
    attribution, and kernel tables of `tables` ((name, domain, attribution) triples):
    ({"domain:name": {attribution: metrics}}, {(name, domain, attribution): kernel table}).
    `trace`: a streamed nsys export (nsys_sqlite.Report) or a Trace, read once for all of
    them (analysis.run.stream)."""
    targets = range_keys(trace) if targets is None else list(targets)
    return stream.views(trace, targets, attributions, tables)


def range_metrics(trace, name: str, domain: str | None = R.DOMAIN, attribution: str = "process") -> dict:
    """The metrics of the module doc over every instance of range `name`; kernels and launch
    calls attributed by `attribution` (`process` or `same_thread`)."""
    return views(trace, [(name, domain)], (attribution,))[0][key(name, domain)][attribution]


def kernel_table(trace, name: str = R.MEASURE, domain: str | None = R.DOMAIN,
                 attribution: str = "process"):
    """The kernels launched inside the range, one row per kernel (its demangled name, so
    eager's sin and cos kernels stay apart though both are `vectorized_elementwise_kernel`):
    calls, total and median duration (cuda_gpu_kern_sum restricted to the range), and the
    launch configuration of its launches in the range that carry the most GPU time, with
    its theoretical occupancy (fields.launch_configs; NA without: torch.profiler traces)."""
    return views(trace, [], (), [(name, domain, attribution)])[1][(name, domain, attribution)]

