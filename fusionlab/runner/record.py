"""run.json: the record of one experiment. Its fields, in the order a run fills them:
base_record (the experiment's identity and settings, status `error` until it ends), the
environment, the check, the timing (timing_record), the peak memory (peak_memory), the
outcome of a failure (failure) and the process's own fields (finish)."""
from __future__ import annotations

import os
import resource
import statistics
import sys
import time
import traceback
import warnings

from fusionlab.core import ranges
from fusionlab.runner import introspect, timing

# the reason a run keeps when its process ends before it writes its own
DIED = ("the process died before the run finished (a crash, a kill or its time limit); "
        "see the run's profile.log")

# what allocators say when they cannot allocate: CUDA's, and the CPU's (c10's
# DefaultCPUAllocator: "can't allocate memory: you tried to allocate N bytes")
OOM_MESSAGES = ("out of memory", "can't allocate memory")


def resolve_device(torch, device: str) -> str:
    """`auto` as cuda where torch sees a GPU, else cpu; cuda and cpu as they are."""
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def base_record(spec) -> dict:
    """The record's first fields: the experiment's identity and settings, status `error`
    (a record the process never finishes stays failed)."""
    import torch
    from fusionlab.experiments.registry import MODELS
    return {"model": spec.model, "variant": spec.variant, "batch": spec.batch,
            "size": spec.size, "sizes": MODELS[spec.model].resolve_sizes(spec.size),
            "model_origin": MODELS[spec.model].origin or "fusionlab",
            "mode": spec.mode, "dtype": spec.dtype, "device": resolve_device(torch, spec.device),
            "profiler": spec.profiler, "warmup_iters": spec.warmup, "warmup_min_s": spec.warmup_min_s,
            "paired_eager": spec.paired_eager, "paired_ci": spec.paired_ci, "timing_max_s": spec.timing_max_s,
            "measure_iters": spec.iters, "timing_windows": spec.windows,
            "repeat": spec.repeat, "seed": spec.seed,
            "status": "error", "reason": None,
            "nvtx": {"domain": ranges.DOMAIN, "measure": ranges.MEASURE, "iteration": ranges.ITERATION}}


def windows_context(profiler: str, capture: bool) -> str:
    """What ran around the timing windows: `untraced` (no profiler, or torch.profiler not
    yet started), `nsys-injected` (nsys loaded but its capture range not yet open), or
    `nsys-traced` (nsys tracing the whole process)."""
    if profiler != "nsys":
        return "untraced"
    return "nsys-injected" if capture else "nsys-traced"


def timing_record(windows: list[float], spec, measure_s: float, device: str,
                  cuda_event_ms: float | None, capture: bool, probe_ms: list[float] = (),
                  eager_windows: list[float] | None = None, harness_us: float | None = None,
                  until: timing.Until | None = None) -> dict:
    """run.json's timing: the windows (see timing.time_windows) with their median and CV,
    the timing's own cost (timing.harness_cost), the host probe's times beside them
    (jobs.host_probe), eager's windows timed between them, the paired speedup with
    its 95% CI, why the pairs stopped and the ratio at the host's fast and slow states
    (timing.time_paired_windows, timing.host_states; None when not paired), and the
    measured range (under the profiler, when there is one)."""
    med = statistics.median(windows) if windows else None
    cv = (statistics.stdev(windows) / statistics.fmean(windows)) if len(windows) > 1 else None
    ctx = windows_context(spec.profiler, capture)
    measure_ms = measure_s * 1e3 / spec.iters
    paired = bool(eager_windows)
    ci = timing.median_ratio_ci(windows, eager_windows) if paired else None
    return {"windows_ms": windows, "window_iters": spec.iters, "windows_context": ctx,
            "window_median_ms": med, "window_cv": cv,
            "untraced_wall_time_per_iter_ms": med if ctx == "untraced" else None,
            "measure_wall_time_per_iter_ms": measure_ms,
            "traced_wall_time_per_iter_ms": measure_ms if spec.profiler != "none" else None,
            "capture_range": bool(capture),
            "wall_time_per_iter_ms": med if ctx == "untraced" else measure_ms,
            "cuda_event_time_per_iter_ms": cuda_event_ms,
            "harness_us_per_iter": harness_us,
            "harness_share": harness_us / (med * 1e3) if (harness_us is not None and med) else None,
            "host_probe_ms": list(probe_ms),
            "host_probe_median_ms": statistics.median(probe_ms) if probe_ms else None,
            "eager_windows_ms": eager_windows,
            "paired_speedup": timing.paired_speedup(windows, eager_windows) if paired else None,
            "paired_speedup_ci": list(ci) if ci else None,
            "paired_stop": until.reason if (paired and until is not None) else None,
            **(timing.host_states(windows, eager_windows, probe_ms) if paired else
               timing.host_states([], [], []))}


def peak_memory(torch, device: str, first_calls_peak: int | None = None) -> dict:
    """The run's peak memory: the GPU allocator's peak over the first calls and the
    iterations after the check, or the process's max RSS on the CPU."""
    if device == "cuda":
        return {"peak_memory_bytes": max(torch.cuda.max_memory_allocated(), first_calls_peak or 0)}
    return {"peak_memory_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "peak_memory_kind": "process max RSS (CPU)"}


def is_out_of_memory(e: BaseException) -> bool:
    """An allocation failure: torch's OutOfMemoryError, or an error whose message is an
    allocator's (OOM_MESSAGES: CUDA's outside its allocator, the CPU allocator's)."""
    import torch
    if isinstance(e, torch.OutOfMemoryError):
        return True
    text = str(e).lower()
    return any(m in text for m in OOM_MESSAGES)


def failure(e: BaseException) -> dict:
    """The record's fields for a run that raised: status `oom` (is_out_of_memory) or
    `error`, the exception's first line as the reason, and its traceback."""
    first = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return {"status": "oom" if is_out_of_memory(e) else "error",
            "reason": f"{type(e).__name__}: {first}"[:500],
            "traceback": traceback.format_exc()}


def record_warnings(caught) -> list[str]:
    """Every distinct warning of the run, kept in run.json and shown in the log (not
    hidden: a deprecation such as TorchScript's is part of the result)."""
    seen = []
    for w in caught:
        line = f"{w.category.__name__}: {str(w.message).strip().splitlines()[0] if str(w.message).strip() else ''}"
        if line not in seen:
            seen.append(line[:300])
            print(f"[fusionlab] warning: {warnings.formatwarning(w.message, w.category, w.filename, w.lineno).strip()}",
                  file=sys.stderr)
    return seen


def finish(rec: dict, spec, caught) -> dict:
    """The record's closing fields, in place: warnings, the compile debug files (with
    --compile-debug), elapsed time, the process's lifetime and its command line."""
    rec.pop("phase", None)
    rec["warnings"] = record_warnings(caught)
    if spec.compile_debug:
        rec["compile_debug"] = {"dir": os.path.abspath(spec.compile_debug), "files": introspect.debug_artifacts(spec.compile_debug)}
    return rec


def close(rec: dict, started: float, process_start: float) -> dict:
    """The process's own fields, last: elapsed seconds since `started`, the process's
    start and end (unix seconds), and its command line."""
    rec["elapsed_s"] = time.time() - started
    rec["process_start_unix"] = process_start
    rec["process_end_unix"] = time.time()
    rec["argv"] = sys.argv
    return rec
