"""One experiment, in order: support checks, build, check against eager, warm-up, the
untraced timing windows, the traced measured range, the record (run); and the process
around it (execute): slot, time limit, failures recorded, run.json written.

The measured iterations sit inside the NVTX ranges of core.ranges; under nsys those are
what the analysis reads. With --profiler torch the same ranges are also labelled for
torch.profiler and a Chrome trace is written (the CPU / no-nsys path)."""
from __future__ import annotations

import contextlib
import copy
import sys
import time
import warnings

from fusionlab.core import axes, ranges
from fusionlab.core.io import atomic_path
from fusionlab.jobs import host_gate, host_probe
from fusionlab.jobs import slots as gpu_slots
from fusionlab.runner import check, dynamo_record, environment, introspect, op_record, process, record, timing
from fusionlab.runner.spec import ExperimentSpec

# paired windows stop at this many x --windows pairs at most (timing.Until)
MAX_WINDOWS_FACTOR = 8


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


def measuring(device: str):
    """host_gate.quiet on the GPU outside Nsight Compute; a gate that pauses nothing on the
    CPU (the CPU's kernels are the host's own work) and under ncu (its replays last minutes)."""
    import os
    if device != "cuda" or os.environ.get(gpu_slots.COUNTERS_ENV):
        return contextlib.nullcontext(host_gate._Off())
    return host_gate.quiet()


def why_unsupported(torch, spec, device: str) -> str | None:
    """Why this run cannot happen here (no GPU, a mode the model lacks, a variant that does
    not apply), known before anything is built; None when it can."""
    from fusionlab.experiments.registry import MODELS, VARIANTS
    if device == "cuda" and not torch.cuda.is_available():
        return "device cuda asked for, but torch sees no GPU"
    if spec.mode not in MODELS[spec.model].modes:
        return f"model {spec.model} has no {spec.mode} mode"
    return VARIANTS[spec.variant].supports(spec.model, device, spec.mode)


def Autocast(torch, model, device: str, dtype):
    """model with its forward under torch.autocast(device, dtype): one module, so the
    variant (compile, a CUDA graph) takes the autocast in with it, and eager runs it too."""
    class AutocastModule(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, *args):
            with torch.autocast(device_type=device, dtype=dtype):
                return self.inner(*args)
    return AutocastModule(model)


def build(torch, spec, device: str):
    """The model and its inputs (seeded), an untouched copy for eager, and the variant
    applied to the model. Returns (model, ref_model, fn, inputs)."""
    from fusionlab.experiments.registry import MODELS, VARIANTS
    torch.manual_seed(spec.seed)
    model_spec = MODELS[spec.model]
    model, inputs = model_spec.build(spec.batch, getattr(torch, axes.weights_dtype(spec.dtype)), device,
                                     **model_spec.resolve_sizes(spec.size))
    if spec.dtype in axes.AUTOCAST:
        model = Autocast(torch, model, device, getattr(torch, axes.AUTOCAST[spec.dtype]))
    model.train(spec.mode == "train")
    ref_model = copy.deepcopy(model)
    fn = VARIANTS[spec.variant].apply(model, inputs, {"compile_mode": spec.compile_mode, "dtype": spec.dtype,
                                                      "device": device, "mode": spec.mode})
    return model, ref_model, fn, inputs


def timed_loops(torch, spec, fn, model, ref_model, inputs, optimizers: dict):
    """loop_of(f, m): the timed loop (timing.make_loop) of callable f over model m's
    parameters and optimizer, on the run's inputs, mode and dtype."""
    def loop_of(f, m):
        return timing.make_loop(torch, spec.mode, f, inputs, m, optimizers.get(id(m)), spec.dtype)
    return loop_of


def paired_timing(torch, spec, device, variant_loop, eager_loop, sync, probe, probe_ms, rec, until=None,
                  check=None):
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
        timing.warm_up(eager_loop, sync, spec.warmup, spec.warmup_min_s)
        windows, eager = timing.time_paired_windows(variant_loop, eager_loop, sync, spec.windows, spec.iters,
                                                    probe, probe_ms, until, check)
    except (torch.OutOfMemoryError, RuntimeError) as e:
        if not record.is_out_of_memory(e):
            raise
        rec["paired_eager_error"] = f"out of memory with eager beside the variant: {str(e).splitlines()[0][:200]}"
    if windows is None:
        # outside the except block: its traceback no longer holds eager's activations
        del probe_ms[:]
        eager_loop = None
        gc.collect()
        if device == "cuda":
            torch.cuda.empty_cache()
        windows = timing.time_windows(variant_loop, sync, spec.windows, spec.iters, probe, probe_ms, check)
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    return windows, eager, peak


def traced_measure(torch, spec, device: str, rng, phase, run_iter, sync,
                   capture_open: bool = False) -> tuple[float, float | None, bool]:
    """The measured iterations inside the MEASURE range (and one ITERATION range each),
    under the profiler: torch.profiler started here, or nsys's capture range opened here
    (--capture-range; unless `capture_open`: already opened before the GPU slot).
    run_iter is one iteration of the timed loop's (timing.iteration), run in the mode's
    grad mode, entered once. Returns (wall seconds, CUDA-event ms per iteration, capture)."""
    prof = None
    if spec.profiler == "torch":
        acts = [torch.profiler.ProfilerActivity.CPU]
        if device == "cuda":
            acts.append(torch.profiler.ProfilerActivity.CUDA)
        prof = torch.profiler.profile(activities=acts)
        prof.__enter__()
    capture = spec.profiler == "nsys" and spec.capture_range and device == "cuda"
    if capture and not capture_open:  # nsys --capture-range=cudaProfilerApi
        torch.cuda.profiler.start()
    if device == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with phase(ranges.MEASURE), timing.grad_mode(torch, spec.mode):
        t0 = time.perf_counter()
        if device == "cuda":
            start.record()
        for _ in range(spec.iters):
            with rng(ranges.ITERATION):
                run_iter()
        if device == "cuda":
            end.record()
        sync()
        wall = time.perf_counter() - t0
    if op_record.applies(spec, device):   # an eager run's op record, inside the capture, after MEASURE
        op_record.attribution_iteration(torch, spec, rng, run_iter, sync)
    if capture and not capture_open:
        torch.cuda.profiler.stop()  # (a slot's process stops it after letting go of the GPU)
    if prof is not None:
        prof.__exit__(None, None, None)
        with atomic_path(spec.trace) as tmp:
            prof.export_chrome_trace(tmp)
    return wall, (start.elapsed_time(end) / spec.iters if device == "cuda" else None), capture


def run(spec: ExperimentSpec, rec: dict, phases: process.Phases | None = None,
        capture: process.Capture | None = None) -> dict:
    """One experiment (module doc). Fills rec (from record.base_record) and the seconds of
    each phase into phases; exceptions propagate to execute."""
    import torch
    mark = phases.mark if phases else (lambda name: None)
    capture_open = bool(capture and capture.early)

    device = rec["device"]
    rec["versions"] = environment.versions(torch, device, spec.profiler)
    rec["gpu"] = environment.gpu_name(torch, device)
    why_not = why_unsupported(torch, spec, device)
    if why_not:
        rec.update(status="unsupported", reason=why_not)
        return rec
    rec.update(environment.gpu_identity(torch, device))
    mark("cuda_init")
    rng = Ranges(torch, use_record_function=spec.profiler == "torch")

    def phase(name):
        # a phase of the run: its NVTX range, and its name in rec for a timeout's reason
        rec["phase"] = name
        return rng(name)

    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    if "torch._dynamo" in sys.modules:  # a run starts from a clean compile state, also in-process
        torch._dynamo.reset()  # (importing dynamo for an eager run would cost a second)
    introspect.reset_compile_counters(torch)
    dynamo = dynamo_record.Watch()    # Dynamo's and Inductor's counters at marks (run.json's dynamo)
    slot = rec.get("gpu_slot")   # build and check on every core it may use (slots.build_cpus)
    gpu_slots.pin_process(gpu_slots.build_cpus(slot, gpu_slots.parse_slots(spec.slots) if spec.slots else []))
    with phase(ranges.BUILD):
        model, ref_model, fn, inputs = build(torch, spec, device)
    if device == "cpu" and spec.profiler == "torch" and "torch._inductor.config" in sys.modules:
        # Inductor's generated C++ kernels as profiler events on the CPU (read when it
        # generates them, at the first call; torch.compile imported its config at build).
        # A variant that does not compile never imports Inductor: a second of every run.
        sys.modules["torch._inductor.config"].cpp.enable_kernel_profile = True
    mark("build")
    optimizers = {}
    if spec.mode == "train" and spec.optimizer == "sgd":
        optimizers = {id(m): torch.optim.SGD(m.parameters(), lr=1e-3) for m in (model, ref_model)}
    step = check.make_step(torch, spec, inputs, optimizers)
    # the fp64 reference needs the parameters as they were; only an optimizer step changes them
    pristine = copy.deepcopy(ref_model) if optimizers else ref_model

    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    # Inductor's provenance and fusion log; the profiled process lowers its graphs (node meta)
    logs = introspect.compile_logs(torch, spec.out, lower=spec.profiler != "none")
    with phase(ranges.CHECK), logs or contextlib.nullcontext():
        process.injected_fault(spec)
        result = check.check_against_eager(torch, spec, device, step, fn, model, ref_model, pristine, inputs, sync)
    if logs:
        rec["inductor_logs"] = logs.summary()
    del pristine
    mark("check")
    rec["compile"] = introspect.compile_introspection(torch)
    dynamo.mark("check")
    first_calls_peak = result.pop("first_calls_peak_bytes", None)
    rec["first_call_s"] = result.pop("first_call_s")
    rec["eager_first_call_s"] = result.pop("eager_first_call_s")
    # eager compiles nothing: its first call follows the check's eager call, warm
    rec["compile_latency_s"] = (None if spec.variant == "eager" else
                                rec["first_call_s"] - rec["eager_first_call_s"])
    rec["correctness"] = result
    if not result["passed"]:
        rec.update(status="incorrect", reason=check.incorrect_reason(result))
        return rec

    # only now down to the slot's measuring cores (and pin_cpus): build and check (a cold
    # compile: seconds to minutes of Inductor's own threads) had the shared cores too
    if slot:
        gpu_slots.pin_process(slot.get("cpus"))
        gpu_slots.mark_measuring(slot["gpu"])   # the next process may claim the GPU and start up
    rec["cpus"] = process.pin_cpus(spec.pin_cpus, device)
    loop_of = timed_loops(torch, spec, fn, model, ref_model, inputs, optimizers)
    variant_loop = loop_of(fn, model)
    with phase(ranges.WARMUP):
        rec["warmup_iters_run"] = timing.warm_up(variant_loop, sync, spec.warmup, spec.warmup_min_s)
    mark("warmup")
    dynamo.mark("warmup")
    # untraced timing: whole windows of iterations, before any profiler traces this process
    rec["phase"] = "timing"
    probe_ms, eager_windows, variant_peak, until = [], None, None, None
    probe = host_probe.make_probe(torch)
    harness_us = timing.harness_cost(lambda f: timing.make_loop(torch, "inference", f, inputs), sync, spec.iters)
    # the windows with the sweep's own work paused (host_gate.quiet; not under Nsight
    # Compute, whose replays are heavy work themselves), each block judged by the host's
    # load and timed again where it was disturbed (timing.HostCheck)
    with measuring(device) as gate:
        host_check = timing.HostCheck(host_gate.CpuMeter(), gate, spec.windows, retime=device == "cuda")
        if spec.paired_eager and spec.variant != "eager" and spec.windows:
            until = timing.Until(spec.paired_ci, spec.timing_max_s, spec.windows * MAX_WINDOWS_FACTOR)
            windows, eager_windows, variant_peak = paired_timing(torch, spec, device, variant_loop,
                                                                 loop_of(ref_model, ref_model), sync, probe,
                                                                 probe_ms, rec, until, host_check)
        else:
            windows = timing.time_windows(variant_loop, sync, spec.windows, spec.iters, probe, probe_ms, host_check)
    rec["host_check"] = host_check.record()
    rec["host_check"]["gate"] = dict(gate.info)   # with held_s, known once the gate is let go
    mark("timing")
    one_iteration = timing.iteration(torch, spec.mode, fn, inputs, model, optimizers.get(id(model)), spec.dtype)
    # the traced iterations: a training loop's zero_grad, loss and optimizer step in their
    # ranges (core.ranges.LOOP; the timed loops and the guard cost's iteration open none)
    traced_iteration = timing.iteration(torch, spec.mode, fn, inputs, model, optimizers.get(id(model)), spec.dtype,
                                        rng=rng)
    if spec.mode == "train":
        rec["loop_sources"] = timing.loop_sources()
    dynamo.mark("timing")
    # the Dynamo counters and the guards' cost, after the windows (timed: the sweep paused too)
    with measuring(device), timing.grad_mode(torch, spec.mode):
        rec["dynamo"] = dynamo.record(one_iteration, sync, len(windows) * spec.iters)
    with measuring(device) if spec.profiler != "none" else contextlib.nullcontext() as traced_gate:
        wall, cuda_event_ms, captured = traced_measure(torch, spec, device, rng, phase, traced_iteration, sync,
                                                       capture_open)
    if traced_gate is not None:
        rec["traced_gate"] = dict(traced_gate.info)
    mark("measure")

    rec["timing"] = record.timing_record(windows, spec, wall, device, cuda_event_ms, captured, probe_ms,
                                         eager_windows, harness_us, until)
    rec.update(record.peak_memory(torch, device, max(filter(None, (first_calls_peak, variant_peak)), default=None)))
    rec.update(status="ok", reason=None)
    return rec


def execute(spec: ExperimentSpec, phases: process.Phases) -> int:
    """The runner's process for one experiment: claim a GPU slot (--slots), write a failed
    record once its waits are over (a process that dies hard from then on still leaves its
    run recorded; one killed while it waits leaves none, and its run is started again),
    run it under its time limit, record any failure (status oom / error / unsupported),
    write run.json.
    Returns 0 (a slot's process exits here, skipping the teardown)."""
    t0 = time.time()
    process.own_folder(spec)
    process.compile_debug_environment(spec)
    phases.mark("imports")
    counters_wait_s = process.take_counters()   # under Nsight Compute: before any GPU is claimed
    slot = process.claim_slot(spec, spec.device)  # before CUDA starts: it sets CUDA_VISIBLE_DEVICES
    if slot or counters_wait_s is not None:
        phases.mark("gpu_wait")  # waiting for the counters and for a GPU free to claim
    capture = process.Capture()
    rec = record.base_record(spec)
    if counters_wait_s is not None:
        rec["counters_wait_s"] = counters_wait_s
    rec["phases_s"] = phases.seconds
    process.write_record(spec.out, {**rec, "reason": record.DIED})
    from fusionlab.experiments.registry import Unsupported
    with contextlib.ExitStack() as gpu, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if slot:  # CUDA starts outside the lock; then wait for the GPU (not timed out)
            rec["gpu_slot"] = gpu.enter_context(process.hold_slot(slot, phases, spec, rec, capture))
        disarm = process.start_watchdog(spec, rec)
        try:
            run(spec, rec, phases, capture)
        except Unsupported as e:  # the variant found it cannot apply to this model
            rec.update(status="unsupported", reason=str(e)[:500])
        except Exception as e:  # recorded, never raised: the sweep goes on
            rec.update(record.failure(e))
        disarm()
    if slot:
        process.release_slot(slot, capture)
    record.finish(rec, spec, caught)
    phases.mark("finish")
    record.close(rec, t0, phases.start)
    process.write_record(spec.out, rec)
    print(f"[fusionlab] {spec.label}: {rec['status']}" + (f" ({rec['reason']})" if rec.get("reason") else ""),
          file=sys.stderr)
    if slot:
        process.exit_now(spec)
    return 0
