"""The runner's process: its phases, its time limit (the watchdog), its cores, its GPU
slot (jobs.slots) and the faults it can be told to inject."""
from __future__ import annotations

import contextlib
import faulthandler
import os
import sys
import threading
import time
from dataclasses import dataclass

IMPORTED = time.time()  # this process's start, near enough (see Phases)

from fusionlab.core import owner as folder_owner  # noqa: E402
from fusionlab.core.io import write_json_atomic  # noqa: E402
from fusionlab.jobs import slots as gpu_slots  # noqa: E402
from fusionlab.runner import record  # noqa: E402


class Phases:
    """Where a run's process spends its time: seconds per phase, from this module's import
    (the interpreter's own start, ~0.05 s, comes before it): startup (to main()), imports
    (torch and the registry), cuda_init, gpu_wait (waiting for the GPU's slot), then the
    run's phases (build, check, warmup, timing, measure), and finish (the record). Kept in
    run.json as phases_s."""

    def __init__(self):
        self.start = IMPORTED
        self.last = time.time()
        self.seconds = {"startup": round(self.last - self.start, 4)}

    def mark(self, name: str) -> None:
        now = time.time()
        self.seconds[name] = round(self.seconds.get(name, 0.0) + now - self.last, 4)
        self.last = now


@dataclass
class Capture:
    """nsys's capture range (--capture-range): `early` when this process opened it before
    its GPU slot (before_the_lock); it is then closed after the slot is let go, not around
    the measured range."""
    early: bool = False


OWNER: folder_owner.Owner | None = None   # this process's hold on its run folder (own_folder)


def own_folder(spec) -> None:
    """Hold the run folder of spec.out for this process's lifetime (core.owner); exit 4
    with one line, writing nothing, when another live process owns it."""
    global OWNER
    if OWNER is not None:   # an earlier experiment of this process (in-process callers)
        OWNER.close()
    OWNER = folder_owner.hold(os.path.dirname(os.path.abspath(spec.out)), "runner")


def write_record(path: str, rec: dict) -> bool:
    """rec as JSON at path, atomically, only while this process owns its run folder
    (own_folder); False, with a line on stderr, when it no longer does."""
    if OWNER is None:
        write_json_atomic(path, rec)
        return True
    return OWNER.write_json(path, rec)


def pin_cpus(spec: str, device: str) -> list[int] | None:
    """Pin this process to a few cores (sched_setaffinity) to steady host-bound timings.
    spec: `none`; a list such as `2,3`; or `auto`: on cuda, the last two cores this process
    may use (two: the main thread and autograd's device thread), on the CPU none (the
    CPU's own kernels use every core). Returns the cores pinned to, or None; ValueError
    (the run's error) where a listed core is not one this process may use (pinning to it
    would fail, and the record would name cores the run never ran on)."""
    if spec == "none" or not hasattr(os, "sched_setaffinity"):
        return None
    allowed = sorted(os.sched_getaffinity(0))
    if spec == "auto":
        if device != "cuda" or len(allowed) < 4:
            return None
        cpus = allowed[-2:]
    else:
        cpus = [int(c) for c in spec.split(",")]
        outside = [c for c in cpus if c not in allowed]
        if outside:
            raise ValueError(f"--pin-cpus {spec}: core {outside[0]} is not one this process may use "
                             f"(cores {','.join(map(str, allowed))})")
    gpu_slots.pin_process(cpus)   # every thread (autograd's device thread is started by now)
    return cpus


def injected_fault(spec) -> None:
    """Fault injection for the reliability tests and for users checking their setup:
    FUSIONLAB_INJECT_FAULT="mlp:compile:32=oom,pointwise_heavy:eager:8=error" makes the
    named runs raise an out-of-memory error or a RuntimeError in their check step; =abort
    kills the process (a crash); =hang never returns (for --timeout)."""
    faults = os.environ.get("FUSIONLAB_INJECT_FAULT", "")
    for item in filter(None, (s.strip() for s in faults.split(","))):
        key, _, kind = item.partition("=")
        if key == f"{spec.model}:{spec.variant}:{spec.batch}":
            import torch
            if kind == "abort":  # a hard crash: no Python exception, no cleanup
                os.abort()
            while kind == "hang":
                time.sleep(1)
            if kind == "oom":
                raise torch.OutOfMemoryError("CUDA out of memory (injected by FUSIONLAB_INJECT_FAULT)")
            raise RuntimeError(f"injected fault ({kind or 'error'}) by FUSIONLAB_INJECT_FAULT")


def timed_out_span(slot_info: dict | None, now: float) -> dict:
    """The record fields of a process stopped at its time limit at `now`: its lifetime
    and, if it held its GPU's lock, the lock's span up to now (it is let go as the process
    exits), so that the overlap check and the sweep's breakdown see the time it held."""
    out = {"process_start_unix": IMPORTED, "process_end_unix": now}
    held = (slot_info or {}).get("held_unix")
    if held and held[1] is None:
        out["gpu_slot"] = {**slot_info, "held_unix": [held[0], now]}
    return out


def start_watchdog(spec, rec: dict):
    """--timeout: a run still going after that many seconds (a compiler that never
    finishes, a kernel that hangs) is recorded `timeout`, with the phase it was in, and
    the process ends with status 3, so it costs its own slot and never the sweep. A
    Python timer thread writes that record; a hang that never lets go of the GIL is ended
    by faulthandler's C-level timer 30 s later (its traceback goes to the log), leaving
    the record written first. Returns the function that disarms both."""
    if not spec.timeout:
        return lambda: None

    def fire():
        try:
            snap = dict(rec)
        except RuntimeError:  # rec changed size while copied: its first fields will do
            snap = record.base_record(spec)
        snap.update(status="timeout", reason=f"did not finish in {spec.timeout:g} s (in its "
                    f"{snap.get('phase', 'start')} phase) and was stopped")
        snap.pop("phase", None)
        with contextlib.suppress(Exception):   # never in the way of the record
            snap.update(timed_out_span(snap.get("gpu_slot"), time.time()))
        write_record(spec.out, snap)
        print(f"[fusionlab] {spec.label}: timeout ({snap['reason']})", file=sys.stderr, flush=True)
        # no stop_compile_workers here: a stuck compile may hold its workers, and shutting
        # them down from this timer thread could block past the time limit
        os._exit(3)

    timer = threading.Timer(spec.timeout, fire)
    timer.daemon = True
    timer.start()
    faulthandler.dump_traceback_later(spec.timeout + 30, exit=True)

    def disarm():
        timer.cancel()
        faulthandler.cancel_dump_traceback_later()
    return disarm


def scheduler_gpu() -> bool:
    """True inside a batch job whose scheduler assigned the GPUs (SLURM): then the job
    uses what it was given, and claims or locks nothing."""
    return bool(os.environ.get("SLURM_JOB_ID"))


def claim_slot(spec, device: str):
    """The slot this process measures in (see jobs.slots), or None (no --slots,
    a CPU run, or a scheduler's job). Sets CUDA_VISIBLE_DEVICES: call before CUDA starts."""
    if not spec.slots or device != "cuda" or scheduler_gpu():
        return None
    slot = gpu_slots.claim(gpu_slots.parse_slots(spec.slots))
    os.environ["CUDA_VISIBLE_DEVICES"] = slot.gpu
    return slot


def before_the_lock(torch, spec, capture: Capture) -> None:
    """What a slot's process does before it waits for its GPU: all of it CPU work or
    nsys's, none of it GPU work that could disturb the process measuring there. CUDA's
    context; the variant's prepare (registry.VariantSpec: torch.compile's imports and
    compile workers; the CUDA kernels' extension build); under nsys, the capture range
    opened (build, check and warm-up are then traced too, and the measured range). The
    range is closed after the lock is let go: nsys takes seconds to flush its trace at
    cudaProfilerStop."""
    with contextlib.suppress(Exception):  # a CUDA that cannot start fails in the run, recorded
        torch.empty(0, device="cuda")
    from fusionlab.experiments.registry import VARIANTS
    with contextlib.suppress(Exception):  # a failure here happens again in the run, recorded
        # the nsys process starts after the untraced one, which filled the compile caches
        # (so did it for a process under ncu: COUNTERS_ENV)
        cached = spec.profiler == "nsys" or bool(os.environ.get(gpu_slots.COUNTERS_ENV))
        VARIANTS[spec.variant].prepare(spec.variant_options(compile_workers=not cached))
    if spec.profiler == "nsys" and spec.capture_range:
        torch.cuda.profiler.start()
        capture.early = True


def stop_compile_workers(spec) -> None:
    """Shut Inductor's compile-worker processes down before the process exits: left
    running past an os._exit they are re-parented, and nsys's importer then fails on some
    of those runs ("Multiple different definitions of the same VmTidToPidInfo": no
    report)."""
    if "compile" in spec.variant and "torch._inductor.async_compile" in sys.modules:
        with contextlib.suppress(Exception):
            sys.modules["torch._inductor.async_compile"].shutdown_compile_workers()


@contextlib.contextmanager
def hold_slot(slot, phases: Phases, spec, rec: dict, capture: Capture | None = None):
    """Start up outside the lock (before_the_lock, under its own --timeout: an extension
    build can wait forever on a lock a killed build left), then hold the slot's GPU lock;
    yields the slot's record (gpu, cpus, wait_s, held_unix once released)."""
    import torch
    rec["phase"] = "prepare"
    disarm = start_watchdog(spec, rec)
    before_the_lock(torch, spec, capture if capture is not None else Capture())
    disarm()
    phases.mark("cuda_init")
    with gpu_slots.hold(slot) as info:
        phases.mark("gpu_wait")
        yield info


def take_counters() -> float | None:
    """Under Nsight Compute (slots.COUNTERS_ENV set by its step): hold the host's counters
    lock from here to the process's exit, before a GPU is claimed (one order: no deadlock;
    a process waiting for the counters keeps no GPU from the others). Returns the seconds
    waited, or None when not under Nsight Compute."""
    if os.environ.get(gpu_slots.COUNTERS_ENV):
        return gpu_slots.take_counters()
    return None


def release_slot(slot, capture: Capture) -> None:
    """Let go of the slot's claim and close an early capture range (nsys flushes its
    trace for seconds: not on the GPU's time)."""
    gpu_slots.release_claim(slot)
    if capture.early:
        import torch
        with contextlib.suppress(Exception):
            torch.cuda.profiler.stop()


def exit_now(spec) -> None:
    """End a slot's process once its record is written: skip the teardown (CUDA, ...),
    seconds of a job's time."""
    stop_compile_workers(spec)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def compile_debug_environment(spec) -> None:
    """--compile-debug: set the environment that keeps torch's compile debug files
    (introspect.debug_environment); before torch is imported."""
    if spec.compile_debug:
        from fusionlab.runner import introspect
        os.environ.update(introspect.debug_environment(spec.compile_debug))
