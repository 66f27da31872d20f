"""The runner of one experiment: build, check against eager, warm up, measure.

    python -m fusionlab.experiments.run --model mlp --variant compile --batch 128 --out run.json

Runs with or without Snakemake and with or without a profiler around it. The measured
iterations sit inside the NVTX ranges of experiments.ranges; under nsys those are what
the analysis reads. With --profiler torch the same ranges are also labelled for
torch.profiler and a Chrome trace is written (the CPU / no-nsys path).

The process always writes run.json and exits 0 for an experiment that fails in a known
way (status oom / error / unsupported / incorrect), so one bad experiment never stops
a sweep. It exits non-zero only on bad arguments.
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import faulthandler
import os
import platform
import resource
import shutil
import subprocess
import sys
import threading
import time
import traceback
import warnings

_IMPORTED = time.time()  # noqa: E402  (this process's start, near enough: see Phases)

from fusionlab.core import ranges
from fusionlab.core import sizes as size_labels
from fusionlab.core.axes import DTYPES, MODES, PROFILERS
from fusionlab.core.io import atomic_path, write_json_atomic
from fusionlab.experiments import host_probe
from fusionlab.experiments import timing
from fusionlab.experiments.timing import (paired_speedup, time_paired_windows, time_windows,  # noqa: F401
                                          warm_up)
from fusionlab.experiments import slots as gpu_slots


# allclose tolerances per dtype (rtol, atol); atol is scaled by max(1, max|ref|)
TOLERANCE = {"float32": (1e-3, 1e-4), "bfloat16": (1.6e-2, 1e-2), "float16": (5e-3, 1e-3),
             # fp32 math that the GPU runs in TF32 (10 mantissa bits): PyTorch's own tests
             # compare TF32 results with atol 5e-3 (tf32_on_and_off(0.005))
             "tf32": (1e-3, 5e-3)}


def tolerance_key(torch, model, device: str, dtype: str) -> str:
    """The TOLERANCE row of a run: its dtype, or "tf32" where fp32 on the GPU goes through
    TF32 by PyTorch's settings: convolutions (cuDNN allows TF32 by default) or matmuls
    (when the user allowed it). Two correct conv programs (eager, and compile or a folded
    conv, which pick other cuDNN algorithms) then differ by TF32 rounding, ~1e-3."""
    if device != "cuda" or dtype != "float32":
        return dtype
    if torch.backends.cuda.matmul.allow_tf32:
        return "tf32"
    conv = torch.nn.modules.conv._ConvNd
    if torch.backends.cudnn.allow_tf32 and any(isinstance(m, conv) for m in model.modules()):
        return "tf32"
    return dtype


def tool_version(cmd: list[str]) -> str | None:
    if not shutil.which(cmd[0]):
        return None
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip()
        return out.splitlines()[0] if out else None
    except (OSError, subprocess.SubprocessError):
        return None


def versions(torch, device: str, profiler: str) -> dict:
    v = {"python": platform.python_version(), "torch": torch.__version__,
         "cuda": torch.version.cuda, "triton": None, "driver": None,
         "nsys": tool_version(["nsys", "--version"]) if profiler == "nsys" else None,
         "host": platform.node(), "cpu": platform.processor() or platform.machine()}
    try:
        import triton
        v["triton"] = triton.__version__
    except Exception:  # triton is optional on CPU machines
        pass
    if device == "cuda":
        v["driver"] = driver_version()
    return v


def driver_version() -> str | None:
    """The NVIDIA driver's version, from the kernel module (no nvidia-smi process: that
    costs about a second per run), else from nvidia-smi."""
    import re
    try:
        with open("/proc/driver/nvidia/version") as f:
            m = re.search(r"Kernel Module(?: for \w+)?\s+([0-9][0-9.]+)", f.read())
        if m:
            return m.group(1)
    except OSError:
        pass
    return tool_version(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])


class Ranges:
    """Opens a range in NVTX and, when torch.profiler records, as record_function."""

    def __init__(self, torch, use_record_function: bool):
        import nvtx
        self._nvtx = nvtx
        self._torch = torch
        self._rf = use_record_function

    @contextlib.contextmanager
    def __call__(self, name: str):
        with contextlib.ExitStack() as stack:
            stack.enter_context(self._nvtx.annotate(name, domain=ranges.DOMAIN))
            if self._rf:
                stack.enter_context(self._torch.profiler.record_function(ranges.torch_label(name)))
            yield


def as_list(out) -> list:
    """A model's outputs as a list: one tensor, or the tensors of a tuple or list."""
    return list(out) if isinstance(out, (list, tuple)) else [out]


# paired windows stop at this many x --windows pairs at most (timing.Until)
MAX_WINDOWS_FACTOR = 8

CHECK_CHUNK = 1 << 24  # elements per float64 chunk of the check: 128 MiB on the device


def _chunks(t):
    """A tensor's elements in float64 chunks, on its own device (the GPU's copy, not the
    host's: a 2^28-element output took 25 s to compare on the measuring cores)."""
    flat = t.detach().reshape(-1)
    for i in range(0, flat.numel(), CHECK_CHUNK):
        yield flat[i:i + CHECK_CHUNK].double()


def _pairs(a, b):
    """(a's chunk, b's chunk) on b's device: a variant may answer on another device."""
    return ((x.to(y.device), y) for x, y in zip(_chunks(a), _chunks(b)))


def compare(torch, out, ref, dtype: str) -> dict:
    """allclose of every tensor of out against ref, dtype-aware; reports the max errors.
    In float64, on the tensors' device, chunk by chunk."""
    outs, refs = as_list(out), as_list(ref)
    if len(outs) != len(refs):
        return {"passed": False, "reason": f"{len(outs)} outputs, eager has {len(refs)}"}
    rtol, atol = TOLERANCE[dtype]
    max_abs = max_rel = 0.0
    passed = True
    for o, r in zip(outs, refs):
        if o.shape != r.shape:
            return {"passed": False, "reason": f"shape {tuple(o.shape)} != eager {tuple(r.shape)}"}
        if not o.numel():
            continue
        o_finite = r_finite = True
        scale = 1.0
        for oc, rc in _pairs(o, r):
            o_finite &= bool(torch.isfinite(oc).all())
            r_finite &= bool(torch.isfinite(rc).all())
            scale = max(scale, rc.abs().max().item())
        if not o_finite and r_finite:
            return {"passed": False, "reason": "non-finite values where eager has none"}
        diff_sq = ref_sq = 0.0
        for oc, rc in _pairs(o, r):
            diff = (oc - rc).abs()
            max_abs = max(max_abs, diff.max().item())
            diff_sq += diff.pow(2).sum().item()
            ref_sq += rc.pow(2).sum().item()
            passed &= bool(torch.allclose(oc, rc, rtol=rtol, atol=atol * scale))
        max_rel = max(max_rel, diff_sq ** 0.5 / max(ref_sq ** 0.5, 1e-30))
    return {"passed": passed, "max_abs_err": max_abs, "rel_l2_err": max_rel,
            "rtol": rtol, "atol": atol}


def _rmse(a, truth) -> float:
    sq = sum((x - t).pow(2).sum().item() for x, t in _pairs(a, truth))
    return (sq / max(a.numel(), 1)) ** 0.5


def fp64_check(torch, out, ref, run_fp64, dtype: str, multiplier: float = 2.0) -> dict:
    """The Inductor benchmark harness's fallback accuracy test, for outputs that are not
    allclose to eager (different but equally valid rounding: TF32 convolutions, another
    summation order): with the model run in float64 as the truth, the variant passes if
    its RMSE is at most multiplier x eager's own RMSE + atol / 10, for every output."""
    outs, refs, r64s = as_list(out), as_list(ref), as_list(run_fp64())
    atol = TOLERANCE[dtype][1]
    worst = None
    for o, r, t in zip(outs, refs, r64s):
        var, eag = _rmse(o, t), _rmse(r, t)
        ok = var <= multiplier * eag + atol / 10
        if worst is None or not ok:
            worst = {"variant_rmse": var, "eager_rmse": eag, "passed": ok}
        if not ok:
            break
    return {**worst, "multiplier": multiplier,
            "criterion": "RMSE vs float64 <= multiplier * eager RMSE vs float64 + atol/10"}


def injected_fault(args) -> None:
    """Fault injection for the reliability tests and for users checking their setup:
    FUSIONLAB_INJECT_FAULT="mlp:compile:32=oom,pointwise_heavy:eager:8=error" makes the
    named runs raise an out-of-memory error or a RuntimeError in their check step; =abort
    kills the process (a crash); =hang never returns (for --timeout)."""
    spec = os.environ.get("FUSIONLAB_INJECT_FAULT", "")
    for item in filter(None, (s.strip() for s in spec.split(","))):
        key, _, kind = item.partition("=")
        if key == f"{args.model}:{args.variant}:{args.batch}":
            import torch
            if kind == "abort":  # a hard crash: no Python exception, no cleanup
                os.abort()
            while kind == "hang":
                time.sleep(1)
            if kind == "oom":
                raise torch.OutOfMemoryError("CUDA out of memory (injected by FUSIONLAB_INJECT_FAULT)")
            raise RuntimeError(f"injected fault ({kind or 'error'}) by FUSIONLAB_INJECT_FAULT")


def reset_compile_counters(torch) -> None:
    """Clear dynamo's and Inductor's counters, so compile_introspection sees this run only
    (nothing to clear while dynamo is not loaded)."""
    if "torch._dynamo" not in sys.modules:
        return
    from torch._dynamo.utils import counters
    from torch._inductor import metrics as inductor_metrics
    counters.clear()
    inductor_metrics.reset()


def compile_introspection(torch) -> dict | None:
    """Graph breaks, graphs and Inductor kernels generated by torch.compile since the last
    reset_compile_counters, and how many graphs came from Inductor's FX graph cache (a
    warm compile: the first call then costs less than a cold one). None when compile did
    not run."""
    if "torch._dynamo" not in sys.modules:
        return None
    from torch._dynamo.utils import counters
    from torch._inductor import metrics as inductor_metrics
    graphs = counters["stats"].get("unique_graphs", 0)
    if not graphs and not inductor_metrics.generated_kernel_count:
        return None
    return {"graph_breaks": int(sum(counters["graph_break"].values())),
            "graph_break_reasons": sorted(counters["graph_break"])[:20],
            "graphs": int(graphs),
            "generated_kernels": int(inductor_metrics.generated_kernel_count),
            "fx_graph_cache_hits": int(counters["inductor"].get("fxgraph_cache_hit", 0)),
            # a graph that bypasses the cache (or caches turned off) compiled cold: a miss
            "fx_graph_cache_misses": int(counters["inductor"].get("fxgraph_cache_miss", 0)
                                         + counters["inductor"].get("fxgraph_cache_bypass", 0))}


def debug_artifacts(root: str) -> dict:
    """The TORCH_COMPILE_DEBUG files kept for this run: name -> paths under root."""
    keep = ("output_code.py", "ir_post_fusion.txt", "ir_pre_fusion.txt", "fx_graph_readable.py",
            "fx_graph_transformed.py", "inductor_provenance_tracking_node_mappings.json")
    found = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            if f in keep:
                found.setdefault(f, []).append(os.path.relpath(os.path.join(dirpath, f), root))
    return {k: sorted(v) for k, v in sorted(found.items())}


def windows_context(profiler: str, capture: bool) -> str:
    """What ran around the timing windows: `untraced` (no profiler, or torch.profiler not
    yet started), `nsys-injected` (nsys loaded but its capture range not yet open), or
    `nsys-traced` (nsys tracing the whole process)."""
    if profiler != "nsys":
        return "untraced"
    return "nsys-injected" if capture else "nsys-traced"


def timing_record(windows: list[float], args, measure_s: float, device: str,
                  cuda_event_ms: float | None, capture: bool, probe_ms: list[float] = (),
                  eager_windows: list[float] | None = None, harness_us: float | None = None,
                  until: timing.Until | None = None) -> dict:
    """run.json's timing: the windows (see timing.time_windows) with their median and CV,
    the timing's own cost (timing.harness_cost), the host probe's times beside them
    (host_probe), eager's windows timed between them, the paired speedup with its 95% CI,
    why the pairs stopped and the ratio at the host's fast and slow states
    (timing.time_paired_windows, timing.host_states; None when not paired), and the
    measured range (under the profiler, when there is one)."""
    import statistics
    med = statistics.median(windows) if windows else None
    cv = (statistics.stdev(windows) / statistics.fmean(windows)) if len(windows) > 1 else None
    ctx = windows_context(args.profiler, capture)
    measure_ms = measure_s * 1e3 / args.iters
    paired = bool(eager_windows)
    ci = timing.pair_ratio_ci(windows, eager_windows) if paired else None
    return {"windows_ms": windows, "window_iters": args.iters, "windows_context": ctx,
            "window_median_ms": med, "window_cv": cv,
            "untraced_wall_time_per_iter_ms": med if ctx == "untraced" else None,
            "measure_wall_time_per_iter_ms": measure_ms,
            "traced_wall_time_per_iter_ms": measure_ms if args.profiler != "none" else None,
            "capture_range": bool(capture),
            "wall_time_per_iter_ms": med if ctx == "untraced" else measure_ms,
            "cuda_event_time_per_iter_ms": cuda_event_ms,
            "harness_us_per_iter": harness_us,
            "harness_share": harness_us / (med * 1e3) if (harness_us is not None and med) else None,
            "host_probe_ms": list(probe_ms),
            "host_probe_median_ms": statistics.median(probe_ms) if probe_ms else None,
            "eager_windows_ms": eager_windows,
            "paired_speedup": paired_speedup(windows, eager_windows) if paired else None,
            "paired_speedup_ci": list(ci) if ci else None,
            "paired_stop": until.reason if (paired and until is not None) else None,
            **(timing.host_states(windows, eager_windows, probe_ms) if paired else
               timing.host_states([], [], []))}


def pin_cpus(spec: str, device: str) -> list[int] | None:
    """Pin this process to a few cores (sched_setaffinity) to steady host-bound timings.
    spec: `none`; a list such as `2,3`; or `auto`: on cuda, the last two cores this process
    may use (two: the main thread and autograd's device thread), on the CPU none (the
    CPU's own kernels use every core). Returns the cores pinned to, or None."""
    if spec == "none" or not hasattr(os, "sched_setaffinity"):
        return None
    allowed = sorted(os.sched_getaffinity(0))
    if spec == "auto":
        if device != "cuda" or len(allowed) < 4:
            return None
        cpus = allowed[-2:]
    else:
        cpus = [int(c) for c in spec.split(",")]
    gpu_slots.pin_process(cpus)   # every thread (autograd's device thread is started by now)
    return cpus


class Phases:
    """Where a run's process spends its time: seconds per phase, from this module's import
    (the interpreter's own start, ~0.05 s, comes before it): startup (to main()), imports
    (torch and the registry), cuda_init, gpu_wait (waiting for the GPU's slot), then the
    run's phases (build, check, warmup, timing, measure), and finish (the record). Kept in
    run.json as phases_s."""

    def __init__(self):
        self.start = _IMPORTED
        self.last = time.time()
        self.seconds = {"startup": round(self.last - self.start, 4)}

    def mark(self, name: str) -> None:
        now = time.time()
        self.seconds[name] = round(self.seconds.get(name, 0.0) + now - self.last, 4)
        self.last = now


def base_record(args) -> dict:
    import torch
    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    from fusionlab.experiments.registry import MODELS
    return {"model": args.model, "variant": args.variant, "batch": args.batch,
            "size": args.size, "sizes": MODELS[args.model].resolve_sizes(args.size),
            "mode": args.mode, "dtype": args.dtype, "device": device,
            "profiler": args.profiler, "warmup_iters": args.warmup, "warmup_min_s": args.warmup_min_s,
            "paired_eager": args.paired_eager, "paired_ci": args.paired_ci, "timing_max_s": args.timing_max_s,
            "measure_iters": args.iters, "timing_windows": args.windows,
            "repeat": args.repeat, "seed": args.seed,
            "status": "error", "reason": None,
            "nvtx": {"domain": ranges.DOMAIN, "measure": ranges.MEASURE, "iteration": ranges.ITERATION}}


def why_unsupported(torch, args, device: str) -> str | None:
    """Why this run cannot happen here (no GPU, a mode the model lacks, a variant that does
    not apply), known before anything is built; None when it can."""
    from fusionlab.experiments.registry import MODELS, VARIANTS
    if device == "cuda" and not torch.cuda.is_available():
        return "device cuda asked for, but torch sees no GPU"
    if args.mode not in MODELS[args.model].modes:
        return f"model {args.model} has no {args.mode} mode"
    return VARIANTS[args.variant].supports(args.model, device, args.mode)


def build(torch, args, device: str):
    """Build: the model and its inputs (seeded), an untouched copy for eager, and the
    variant applied to the model. Returns (model, ref_model, fn, inputs)."""
    from fusionlab.experiments.registry import MODELS, VARIANTS
    torch.manual_seed(args.seed)
    spec = MODELS[args.model]
    model, inputs = spec.build(args.batch, getattr(torch, args.dtype), device, **spec.resolve_sizes(args.size))
    model.train(args.mode == "train")
    ref_model = copy.deepcopy(model)
    fn = VARIANTS[args.variant].apply(model, inputs, {"compile_mode": args.compile_mode, "dtype": args.dtype,
                                                      "device": device, "mode": args.mode})
    return model, ref_model, fn, inputs


def make_step(torch, args, inputs, optimizers: dict):
    """The check's iteration, step(f, m, xs=inputs): inference is f(*xs) under no_grad;
    train is zero_grad, forward, backward of the mean of the outputs, and the optimizer
    step of m when it has one. Returns the outputs (train: and the gradients), for the
    comparison with eager. Never timed: the windows time timing.make_loop's loop."""
    def step(f, m, xs=inputs):
        if args.mode == "train":
            m.zero_grad(set_to_none=True)
            outs = as_list(f(*xs))
            sum(o.float().mean() for o in outs).backward()
            result = outs + [p.grad for p in m.parameters() if p.grad is not None]
            if id(m) in optimizers:  # not the float64 reference
                optimizers[id(m)].step()
            return result
        with torch.no_grad():
            return f(*xs)
    return step


def check_against_eager(torch, args, device, step, fn, model, ref_model, pristine, inputs, sync) -> dict:
    """Check: the variant's first call against eager's (compare, then the float64 test for
    outputs that are not allclose). Returns the check record with both first-call times
    and, on the GPU, the allocator's peak over the two first calls (first_calls_peak_bytes;
    the peak is reset after the comparison, whose float64 copies are not the run's)."""
    injected_fault(args)
    t0 = time.perf_counter(); ref = step(ref_model, ref_model); sync()
    eager_first = time.perf_counter() - t0
    t0 = time.perf_counter(); out = step(fn, model); sync()
    variant_first = time.perf_counter() - t0
    # the run's peak memory counts both first calls, not the comparison's float64 copies
    first_calls_peak = torch.cuda.max_memory_allocated() if device == "cuda" else None
    tol = tolerance_key(torch, pristine, device, args.dtype)
    check = compare(torch, out, ref, tol)
    check["tolerance"] = tol
    if not check["passed"] and "reason" not in check:
        m64 = copy.deepcopy(pristine).double()
        check["fp64"] = fp64_check(torch, out, ref, lambda: step(
            m64, m64, tuple(x.double() if x.is_floating_point() else x for x in inputs)), tol)
        check["passed"] = check["fp64"]["passed"]
    check["first_call_s"], check["eager_first_call_s"] = variant_first, eager_first
    if first_calls_peak is not None:
        check["first_calls_peak_bytes"] = first_calls_peak
        torch.cuda.reset_peak_memory_stats()
    return check


def incorrect_reason(check: dict) -> str:
    """The one-line reason of a run whose check failed."""
    fp64 = check.get("fp64")
    return check.get("reason") or (
        f"not allclose to eager: max abs err {check['max_abs_err']:.3g}, rel L2 err {check['rel_l2_err']:.3g}"
        + (f"; RMSE vs float64 {fp64['variant_rmse']:.3g}, eager's {fp64['eager_rmse']:.3g}" if fp64 else ""))


def traced_measure(torch, args, device: str, rng, phase, run_iter, sync) -> tuple[float, float | None, bool]:
    """Trace: the measured iterations inside the MEASURE range (and one ITERATION range
    each), under the profiler: torch.profiler started here, or nsys's capture range opened
    here (--capture-range). run_iter is one iteration of the timed loop's
    (timing.iteration), run in the mode's grad mode, entered once. Returns (wall seconds, CUDA-event ms per iteration, capture)."""
    prof = None
    if args.profiler == "torch":
        acts = [torch.profiler.ProfilerActivity.CPU]
        if device == "cuda":
            acts.append(torch.profiler.ProfilerActivity.CUDA)
        prof = torch.profiler.profile(activities=acts)
        prof.__enter__()
    capture = args.profiler == "nsys" and args.capture_range and device == "cuda"
    if capture and not getattr(args, "capture_open", False):  # nsys --capture-range=cudaProfilerApi
        torch.cuda.profiler.start()
    if device == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with phase(ranges.MEASURE), timing.grad_mode(torch, args.mode):
        t0 = time.perf_counter()
        if device == "cuda":
            start.record()
        for _ in range(args.iters):
            with rng(ranges.ITERATION):
                run_iter()
        if device == "cuda":
            end.record()
        sync()
        wall = time.perf_counter() - t0
    if capture and not getattr(args, "capture_open", False):
        torch.cuda.profiler.stop()  # (a slot's process stops it after letting go of the GPU)
    if prof is not None:
        prof.__exit__(None, None, None)
        with atomic_path(args.trace) as tmp:
            prof.export_chrome_trace(tmp)
    return wall, (start.elapsed_time(end) / args.iters if device == "cuda" else None), capture


def peak_memory(torch, device: str, first_calls_peak: int | None = None) -> dict:
    """Record: the run's peak memory (GPU allocator peak over the first calls and the
    iterations after the check, or the process's max RSS on the CPU)."""
    if device == "cuda":
        return {"peak_memory_bytes": max(torch.cuda.max_memory_allocated(), first_calls_peak or 0)}
    return {"peak_memory_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "peak_memory_kind": "process max RSS (CPU)"}


def run(args, rec: dict, phases: Phases | None = None) -> dict:
    """One experiment, in order: support checks, build, check against eager, warm-up,
    untraced timing windows, the traced measured range, the record. Fills rec (from
    base_record) and the seconds of each phase into phases; exceptions propagate to main."""
    import torch
    mark = phases.mark if phases else (lambda name: None)

    device = rec["device"]
    rec["versions"] = versions(torch, device, args.profiler)
    rec["gpu"] = torch.cuda.get_device_name(0) if (device == "cuda" and torch.cuda.is_available()) else None
    why_not = why_unsupported(torch, args, device)
    if why_not:
        rec.update(status="unsupported", reason=why_not)
        return rec
    rec.update(gpu_identity(torch, device))
    mark("cuda_init")
    rng = Ranges(torch, use_record_function=args.profiler == "torch")

    def phase(name):
        # a phase of the run: its NVTX range, and its name in rec for a timeout's reason
        rec["phase"] = name
        return rng(name)

    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    if "torch._dynamo" in sys.modules:  # a run starts from a clean compile state, also in-process
        torch._dynamo.reset()  # (importing dynamo for an eager run would cost a second)
    reset_compile_counters(torch)
    slot = rec.get("gpu_slot")   # build and check on every core it may use (slots.build_cpus)
    gpu_slots.pin_process(gpu_slots.build_cpus(slot, gpu_slots.parse_slots(args.slots) if args.slots else []))
    with phase(ranges.BUILD):
        model, ref_model, fn, inputs = build(torch, args, device)
    if device == "cpu" and args.profiler == "torch" and "torch._inductor.config" in sys.modules:
        # Inductor's generated C++ kernels as profiler events on the CPU (read when it
        # generates them, at the first call; torch.compile imported its config at build).
        # A variant that does not compile never imports Inductor: a second of every run.
        sys.modules["torch._inductor.config"].cpp.enable_kernel_profile = True
    mark("build")
    optimizers = {}
    if args.mode == "train" and args.optimizer == "sgd":
        optimizers = {id(m): torch.optim.SGD(m.parameters(), lr=1e-3) for m in (model, ref_model)}
    step = make_step(torch, args, inputs, optimizers)
    # the fp64 reference needs the parameters as they were; only an optimizer step changes them
    pristine = copy.deepcopy(ref_model) if optimizers else ref_model

    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    with phase(ranges.CHECK):
        check = check_against_eager(torch, args, device, step, fn, model, ref_model, pristine, inputs, sync)
    del pristine
    mark("check")
    rec["compile"] = compile_introspection(torch)
    first_calls_peak = check.pop("first_calls_peak_bytes", None)
    rec["first_call_s"] = check.pop("first_call_s")
    rec["eager_first_call_s"] = check.pop("eager_first_call_s")
    rec["compile_latency_s"] = rec["first_call_s"] - rec["eager_first_call_s"]
    rec["correctness"] = check
    if not check["passed"]:
        rec.update(status="incorrect", reason=incorrect_reason(check))
        return rec

    # only now down to the slot's measuring cores (and pin_cpus): build and check (a cold
    # compile: seconds to minutes of Inductor's own threads) had the shared cores too
    if slot:
        gpu_slots.pin_process(slot.get("cpus"))
    rec["cpus"] = pin_cpus(args.pin_cpus, device)
    loop_of = timed_loops(torch, args, fn, model, ref_model, inputs, optimizers)
    variant_loop = loop_of(fn, model)
    with phase(ranges.WARMUP):
        rec["warmup_iters_run"] = warm_up(variant_loop, sync, args.warmup, args.warmup_min_s)
    mark("warmup")
    # untraced timing: whole windows of iterations, before any profiler traces this process
    rec["phase"] = "timing"
    probe_ms, eager_windows, variant_peak, until = [], None, None, None
    probe = host_probe.make_probe(torch)
    harness_us = timing.harness_cost(lambda f: timing.make_loop(torch, "inference", f, inputs), sync, args.iters)
    if args.paired_eager and args.variant != "eager" and args.windows:
        until = timing.Until(args.paired_ci, args.timing_max_s, args.windows * MAX_WINDOWS_FACTOR)
        windows, eager_windows, variant_peak = paired_timing(torch, args, device, variant_loop,
                                                             loop_of(ref_model, ref_model), sync, probe,
                                                             probe_ms, rec, until)
    else:
        windows = time_windows(variant_loop, sync, args.windows, args.iters, probe, probe_ms)
    mark("timing")
    one_iteration = timing.iteration(torch, args.mode, fn, inputs, model, optimizers.get(id(model)), args.dtype)
    wall, cuda_event_ms, capture = traced_measure(torch, args, device, rng, phase, one_iteration, sync)
    mark("measure")

    rec["timing"] = timing_record(windows, args, wall, device, cuda_event_ms, capture, probe_ms, eager_windows,
                                  harness_us, until)
    rec.update(peak_memory(torch, device, max(filter(None, (first_calls_peak, variant_peak)), default=None)))
    rec.update(status="ok", reason=None)
    return rec


def timed_loops(torch, args, fn, model, ref_model, inputs, optimizers: dict):
    """loop_of(f, m): the timed loop (timing.make_loop) of callable f over model m's
    parameters and optimizer, on the run's inputs, mode and dtype."""
    def loop_of(f, m):
        return timing.make_loop(torch, args.mode, f, inputs, m, optimizers.get(id(m)), args.dtype)
    return loop_of


def paired_timing(torch, args, device, variant_loop, eager_loop, sync, probe, probe_ms, rec, until=None):
    """The timing phase with eager beside the variant (--paired-eager;
    timing.time_paired_windows, pairs added as `until` says): eager, already built for the
    check, warms up as the variant did, then the windows pair.
    On the GPU the run's peak memory stays the variant's: the allocator's peak is taken
    before eager's warm-up and reset after the windows (on the CPU the peak is the
    process's max RSS, eager's windows included). Where eager's part runs out of memory
    (two models and their activations at once), the variant is timed alone, once eager's
    memory is freed, and rec['paired_eager_error'] says why. Returns (variant windows,
    eager windows or None, the variant's peak so far or None)."""
    import gc
    peak = torch.cuda.max_memory_allocated() if device == "cuda" else None
    windows = eager = None
    try:
        warm_up(eager_loop, sync, args.warmup, args.warmup_min_s)
        windows, eager = time_paired_windows(variant_loop, eager_loop, sync, args.windows, args.iters, probe,
                                             probe_ms, until)
    except (torch.OutOfMemoryError, RuntimeError) as e:
        if not (isinstance(e, torch.OutOfMemoryError) or "out of memory" in str(e).lower()):
            raise
        rec["paired_eager_error"] = f"out of memory with eager beside the variant: {str(e).splitlines()[0][:200]}"
    if windows is None:
        # outside the except block: its traceback no longer holds eager's activations
        del probe_ms[:]
        eager_loop = None
        gc.collect()
        if device == "cuda":
            torch.cuda.empty_cache()
        windows = time_windows(variant_loop, sync, args.windows, args.iters, probe, probe_ms)
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    return windows, eager, peak


def timed_out_span(slot_info: dict | None, now: float) -> dict:
    """The record fields of a process stopped at its time limit at `now`: its lifetime
    and, if it held its GPU's lock, the lock's span up to now (it is let go as the process
    exits), so that the overlap check and the sweep's breakdown see the time it held."""
    out = {"process_start_unix": _IMPORTED, "process_end_unix": now}
    held = (slot_info or {}).get("held_unix")
    if held and held[1] is None:
        out["gpu_slot"] = {**slot_info, "held_unix": [held[0], now]}
    return out


def start_watchdog(args, rec: dict):
    """--timeout: a run still going after that many seconds (a compiler that never
    finishes, a kernel that hangs) is recorded `timeout`, with the phase it was in, and
    the process ends with status 3, so it costs its own slot and never the sweep. A
    Python timer thread writes that record; a hang that never lets go of the GIL is ended
    by faulthandler's C-level timer 30 s later (its traceback goes to the log), leaving
    the record written first. Returns the function that disarms both."""
    if not args.timeout:
        return lambda: None

    def fire():
        try:
            snap = dict(rec)
        except RuntimeError:  # rec changed size while copied: its first fields will do
            snap = base_record(args)
        snap.update(status="timeout", reason=f"did not finish in {args.timeout:g} s (in its "
                    f"{snap.get('phase', 'start')} phase) and was stopped")
        snap.pop("phase", None)
        with contextlib.suppress(Exception):   # never in the way of the record
            snap.update(timed_out_span(snap.get("gpu_slot"), time.time()))
        write_json_atomic(args.out, snap)
        print(f"[fusionlab] {args.model}/{args.variant}/bs{args.batch}{size_labels.suffix(args.size)}: timeout ({snap['reason']})",
              file=sys.stderr, flush=True)
        # no stop_compile_workers here: a stuck compile may hold its workers, and shutting
        # them down from this timer thread could block past the time limit
        os._exit(3)

    timer = threading.Timer(args.timeout, fire)
    timer.daemon = True
    timer.start()
    faulthandler.dump_traceback_later(args.timeout + 30, exit=True)

    def disarm():
        timer.cancel()
        faulthandler.cancel_dump_traceback_later()
    return disarm


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


def parse_args(argv=None):
    from fusionlab.experiments.registry import MODELS, VARIANTS
    p = argparse.ArgumentParser(prog="python -m fusionlab.experiments.run", description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, choices=sorted(MODELS))
    p.add_argument("--variant", required=True, choices=sorted(VARIANTS))
    p.add_argument("--batch", required=True, type=int)
    p.add_argument("--size", default="default", metavar="LABEL",
                   help="the model's other sizes: default, or e.g. dim1024-num_layers8 (core.sizes)")
    p.add_argument("--mode", default="inference", choices=MODES)
    p.add_argument("--dtype", default="float32", choices=DTYPES)
    p.add_argument("--warmup", default=50, type=int)
    p.add_argument("--warmup-min-s", default=0.1, type=float,
                   help="warm up for at least this many seconds too (a time floor over --warmup)")
    p.add_argument("--iters", default=200, type=int)
    p.add_argument("--repeat", default=0, type=int, help="repeat index (recorded only)")
    p.add_argument("--seed", default=0, type=int)
    p.add_argument("--windows", default=5, type=int,
                   help="untraced timing windows of --iters iterations each, before the measured range")
    p.add_argument("--paired-eager", action="store_true",
                   help="time eager's windows between the variant's, in this process: a paired speedup")
    p.add_argument("--paired-ci", default=0.02, type=float, metavar="FRAC",
                   help="with --paired-eager: add pairs of windows until the paired ratio's 95%% CI is "
                        "within FRAC of it (0: exactly --windows pairs)")
    p.add_argument("--timing-max-s", default=10.0, type=float, metavar="S",
                   help="with --paired-ci: add no pair after the paired windows have taken S seconds")
    p.add_argument("--pin-cpus", default="none", metavar="auto|none|LIST",
                   help="cores to pin the process to (none; auto: two cores on cuda, none on the CPU; or a list)")
    p.add_argument("--slots", metavar="GPU=CORES[/...]",
                   help="the sweep's GPU slots (experiments.slots): claim one GPU, and measure only "
                        "while holding its lock, on its cores; ignored under a scheduler (SLURM)")
    p.add_argument("--capture-range", action="store_true",
                   help="under `nsys profile --capture-range=cudaProfilerApi`: open it around the measured range")
    p.add_argument("--device", default="auto", choices=("auto", "cuda", "cpu"))
    p.add_argument("--profiler", default="none", choices=PROFILERS,
                   help="which profiler wraps this run (nsys: run under `nsys profile`)")
    p.add_argument("--compile-mode", default="default")
    p.add_argument("--optimizer", default="none", choices=("none", "sgd"),
                   help="train mode: also take an optimizer step (SGD, lr 1e-3) each iteration")
    p.add_argument("--compile-debug", metavar="DIR",
                   help="keep TORCH_COMPILE_DEBUG artifacts (output_code.py, ir_post_fusion.txt) under DIR")
    p.add_argument("--timeout", default=0, type=float, metavar="S",
                   help="time limit in seconds (0: none): a run still going after S seconds "
                        "is recorded `timeout` and stopped")
    p.add_argument("--trace", help="Chrome trace to write (with --profiler torch)")
    p.add_argument("--out", required=True, help="run.json to write")
    a = p.parse_args(argv)
    if a.batch <= 0 or a.iters <= 0 or a.warmup < 0 or a.timeout < 0 or a.windows < 0:
        p.error("--batch and --iters must be positive, --warmup, --windows and --timeout non-negative")
    if not (0 <= a.paired_ci < 1 and 0 <= a.timing_max_s <= 3600):   # (nan fails both)
        p.error("--paired-ci: a fraction from 0 to 1; --timing-max-s: seconds, from 0 to 3600")
    if not 0 <= a.warmup_min_s <= 600:   # (nan fails both)
        p.error(f"--warmup-min-s {a.warmup_min_s}: seconds, from 0 to 600")
    if a.pin_cpus not in ("auto", "none") and not all(c.isdigit() for c in a.pin_cpus.split(",")):
        p.error(f"--pin-cpus {a.pin_cpus!r}: auto, none or a list of core numbers such as 2,3")
    try:  # canonical label: a value equal to the default is not part of it
        a.size = size_labels.label(MODELS[a.model].resolve_sizes(a.size), MODELS[a.model].size_defaults())
    except ValueError as e:
        p.error(f"--size: {e}")
    if a.profiler == "torch" and not a.trace:
        p.error("--profiler torch needs --trace")
    if a.slots:
        try:
            gpu_slots.parse_slots(a.slots)
        except ValueError as e:
            p.error(str(e))
    return a


def scheduler_gpu() -> bool:
    """True inside a batch job whose scheduler assigned the GPUs (SLURM): then the job
    uses what it was given, and claims or locks nothing."""
    return bool(os.environ.get("SLURM_JOB_ID"))


def claim_slot(args, device: str):
    """The slot this process measures in (see experiments.slots), or None (no --slots,
    a CPU run, or a scheduler's job). Sets CUDA_VISIBLE_DEVICES: call before CUDA starts."""
    if not args.slots or device != "cuda" or scheduler_gpu():
        return None
    slot = gpu_slots.claim(gpu_slots.parse_slots(args.slots))
    os.environ["CUDA_VISIBLE_DEVICES"] = slot.gpu
    return slot


def before_the_lock(torch, args) -> None:
    """What a slot's process does before it waits for its GPU: all of it CPU work or
    nsys's, none of it GPU work that could disturb the process measuring there. CUDA's
    context; the variant's prepare (registry.VariantSpec: torch.compile's imports and
    compile workers, about 2 s of a compile run's build on the H200 while it was in the
    lock; the CUDA kernels' extension build); under nsys, the capture range opened
    (build, check and warm-up are then traced too, the measured range as before). The range is closed after the lock
    is let go: nsys takes seconds to flush its trace at cudaProfilerStop."""
    with contextlib.suppress(Exception):  # a CUDA that cannot start fails in run(), recorded
        torch.empty(0, device="cuda")
    from fusionlab.experiments.registry import VARIANTS
    with contextlib.suppress(Exception):  # a failure here happens again in run(), recorded
        # the nsys process starts after the untraced one, which filled the compile caches
        VARIANTS[args.variant].prepare({"compile_mode": args.compile_mode, "dtype": args.dtype,
                                        "compile_workers": args.profiler != "nsys"})
    if args.profiler == "nsys" and args.capture_range:
        torch.cuda.profiler.start()
        args.capture_open = True


def stop_compile_workers(args) -> None:
    """Shut Inductor's compile-worker processes down before the process exits: left
    running past an os._exit they are re-parented, and nsys's importer then failed on
    5 of 34 compile runs ("Multiple different definitions of the same VmTidToPidInfo":
    no report)."""
    if "compile" in args.variant and "torch._inductor.async_compile" in sys.modules:
        with contextlib.suppress(Exception):
            sys.modules["torch._inductor.async_compile"].shutdown_compile_workers()


@contextlib.contextmanager
def hold_slot(slot, phases: Phases, args, rec: dict):
    """Start up outside the lock (before_the_lock, under its own --timeout: an extension
    build can wait forever on a lock a killed build left), then hold the slot's GPU lock;
    yields the slot's record (gpu, cpus, wait_s, held_unix once released)."""
    import torch
    rec["phase"] = "prepare"
    disarm = start_watchdog(args, rec)
    before_the_lock(torch, args)
    disarm()
    phases.mark("cuda_init")
    with gpu_slots.hold(slot) as info:
        phases.mark("gpu_wait")
        yield info


def gpu_identity(torch, device: str) -> dict:
    """Which GPU and cores this process used: the GPU's index as CUDA_VISIBLE_DEVICES
    named it (its first entry; "0" when unset), its UUID, and this process's cores."""
    out = {"cpus_used": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None}
    if device == "cuda" and torch.cuda.is_available():
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        out["gpu_index"] = visible.split(",")[0] if visible else "0"
        out["gpu_uuid"] = str(torch.cuda.get_device_properties(0).uuid)
        out["cuda_visible_devices"] = visible
        out["slurm_job_id"] = os.environ.get("SLURM_JOB_ID")
    return out


def main(argv=None) -> int:
    phases = Phases()
    args = parse_args(argv)
    t0 = time.time()
    if args.compile_debug:  # read by torch at import and by every compile after it
        os.environ["TORCH_COMPILE_DEBUG"] = "1"
        os.environ["TORCH_COMPILE_DEBUG_DIR"] = os.path.abspath(args.compile_debug)
        # a cache hit generates no code and so writes no output_code.py: compile cold
        os.environ["TORCHINDUCTOR_FORCE_DISABLE_CACHES"] = "1"
        os.environ["TORCHINDUCTOR_FX_GRAPH_CACHE"] = "0"
        os.environ["TORCHINDUCTOR_AUTOGRAD_CACHE"] = "0"
    slot = claim_slot(args, args.device)  # before CUDA starts: it sets CUDA_VISIBLE_DEVICES
    rec = base_record(args)
    phases.mark("imports")
    rec["phases_s"] = phases.seconds
    # a record first: a process that dies hard (a crash in a compiler or a kernel, a kill)
    # still leaves its run recorded as failed, and the sweep goes on
    write_json_atomic(args.out, {**rec, "reason": "the process died before the run finished "
                                 "(a crash, a kill or its time limit); see the run's profile.log"})
    from fusionlab.experiments.registry import Unsupported
    with contextlib.ExitStack() as gpu, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if slot:  # CUDA starts outside the lock; then wait for the GPU (not timed out)
            rec["gpu_slot"] = gpu.enter_context(hold_slot(slot, phases, args, rec))
        disarm = start_watchdog(args, rec)
        try:
            run(args, rec, phases)
        except Unsupported as e:  # the variant found it cannot apply to this model
            rec.update(status="unsupported", reason=str(e)[:500])
        except Exception as e:  # recorded, never raised: the sweep goes on
            import torch
            oom = isinstance(e, torch.OutOfMemoryError) or "out of memory" in str(e).lower()
            first = str(e).strip().splitlines()[0] if str(e).strip() else ""
            rec.update(status="oom" if oom else "error", reason=f"{type(e).__name__}: {first}"[:500],
                       traceback=traceback.format_exc())
        disarm()
    if slot:
        gpu_slots.release_claim(slot)
        if getattr(args, "capture_open", False):  # nsys flushes its trace for seconds: not on the GPU's time
            import torch
            with contextlib.suppress(Exception):
                torch.cuda.profiler.stop()
    rec.pop("phase", None)
    rec["warnings"] = record_warnings(caught)
    if args.compile_debug:
        rec["compile_debug"] = {"dir": os.path.abspath(args.compile_debug),
                                "files": debug_artifacts(args.compile_debug)}
    phases.mark("finish")
    rec["elapsed_s"] = time.time() - t0
    rec["process_start_unix"] = phases.start
    rec["process_end_unix"] = time.time()
    rec["argv"] = sys.argv
    write_json_atomic(args.out, rec)
    print(f"[fusionlab] {args.model}/{args.variant}/bs{args.batch}{size_labels.suffix(args.size)}: {rec['status']}"
          + (f" ({rec['reason']})" if rec.get("reason") else ""), file=sys.stderr)
    if slot:  # recorded and traced: skip the teardown (CUDA, ...), seconds of a job's time
        stop_compile_workers(args)
        sys.stdout.flush(); sys.stderr.flush()
        os._exit(0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
