"""Untraced timing: the loop a user writes, timed in windows, with nothing of the harness
inside them.

- loop: loop(n) runs n iterations of the work as a user's own `for` loop does
  (make_loop). Inference: one torch.no_grad() around n direct calls of the variant,
  fn(x). Train: zero_grad, forward, backward of the mean of the output, the optimizer's
  step, per iteration. No closure, context manager or allocation per iteration that a
  user's loop would not have (a no_grad entered per iteration, an extra Python call, or
  an extra kernel such as 0 + loss would each be timed as the variant's). The profiled
  process's traced iterations alone run zero_grad, the loss and the step inside ranges of
  their own (train_iteration's `rng`: core.ranges.LOOP).
- window: one timed loop(iters) between two device synchronizes, in ms per iteration.
- harness_us_per_iter: the same windows over a variant that does nothing (harness_cost):
  what the timing itself costs per iteration, recorded in every run.
- paired windows: eager's windows between the variant's, in one process, in alternating
  order (time_paired_windows). The first `windows` pairs always run; then, with an Until,
  pairs are added until the paired ratio's 95% CI is within Until.ci of it, or its time
  or window cap is hit; Until.reason says which.
- host states (host_states): each pair is placed at the host's fast or slow state by the
  host probe around it. Where both states occur and the paired ratio differs between
  them (a host-bound variant beside a GPU-bound eager slows on a slow host, eager does
  not), the ratio is not host-free: both values are recorded and the run is flagged.
"""
from __future__ import annotations

import contextlib
import math
import os
import re
import statistics
import time

from fusionlab.core import ranges as R
from fusionlab.core.ratios import median_ratio_ci, t95  # noqa: F401  (median_ratio_ci: the record's paired CI)

# a pair is at the host's slow state when its probe is above (1 + this) x the fastest pair's
HOST_STATE_TOL = 0.2
# the fast- and slow-state paired ratios differ by more than this: the run is host-sensitive
HOST_SENSITIVE_GAP = 0.05
def train_iteration(torch, fn, inputs, model, optimizer=None, dtype: str = "float32", rng=None):
    """One training iteration as a user writes it: zero_grad, forward, backward of the mean
    of the output(s) (in float32: a float32 output's mean directly), optimizer step.
    With `rng` (runner.experiment.Ranges: the profiled process's traced iterations only),
    zero_grad, the loss and the optimizer step each run inside their range
    (core.ranges.LOOP); without it (every timed loop) the iteration opens none."""
    zero_grad = model.zero_grad
    step = optimizer.step if optimizer is not None else None
    as_float = dtype != "float32"

    def loss(out):
        if isinstance(out, torch.Tensor):
            return out.float().mean() if as_float else out.mean()
        total = None
        for o in out:
            m = o.float().mean()
            total = m if total is None else total + m
        return total

    def iteration():
        zero_grad(set_to_none=True)
        loss(fn(*inputs)).backward()
        if step is not None:
            step()
    if rng is None:
        return iteration

    def ranged_iteration():
        with rng(R.ZERO_GRAD):  # loop: zero_grad
            zero_grad(set_to_none=True)
        out = fn(*inputs)
        with rng(R.LOSS):  # loop: loss
            total = loss(out)
        del out
        total.backward()
        del total
        if step is not None:
            with rng(R.OPTIMIZER_STEP):  # loop: optimizer_step
                step()
    return ranged_iteration


def loop_sources() -> dict[str, str]:
    """file:line of each loop part's line in train_iteration's ranged iteration (the
    lines marked `# loop: NAME`), by its range name (core.ranges.LOOP): run.json's
    loop_sources, the source line analysis.run.attribution gives a loop part's rows."""
    path = os.path.abspath(__file__)
    out = {}
    with open(path) as f:
        for i, line in enumerate(f, 1):
            m = _LOOP_MARK.search(line)
            if m and m.group(1) in R.LOOP:
                out[m.group(1)] = f"{path}:{i}"
    return out


_LOOP_MARK = re.compile(r"with rng\(R\.\w+\):\s+# loop: (\w+)\s*$")


def iteration(torch, mode: str, fn, inputs, model=None, optimizer=None, dtype: str = "float32", rng=None):
    """One iteration of make_loop's, as a callable, without the grad mode around it (the
    caller enters grad_mode(mode) once): the traced range's iterations. With `rng`, a
    training iteration's loop parts run in their ranges (train_iteration)."""
    if mode == "train":
        return train_iteration(torch, fn, inputs, model, optimizer, dtype, rng)
    return lambda: fn(*inputs)


def grad_mode(torch, mode: str):
    """The grad mode a loop of `mode` runs in: no_grad for inference, unchanged for train."""
    return contextlib.nullcontext() if mode == "train" else torch.no_grad()


def make_loop(torch, mode: str, fn, inputs, model=None, optimizer=None, dtype: str = "float32"):
    """loop(n): n iterations of fn on inputs, as a bare user loop runs them (module doc)."""
    if mode == "train":
        it = train_iteration(torch, fn, inputs, model, optimizer, dtype)

        def train_loop(n):
            for _ in range(n):
                it()
        return train_loop
    no_grad = torch.no_grad
    if len(inputs) == 1:
        x, = inputs

        def loop(n):
            with no_grad():
                for _ in range(n):
                    fn(x)
        return loop

    def loop_args(n):
        with no_grad():
            for _ in range(n):
                fn(*inputs)
    return loop_args


def per_iteration(step):
    """A loop from a one-iteration callable (tests, and callers that time a step): one
    Python call per iteration more than make_loop's."""
    def loop(n):
        for _ in range(n):
            step()
    return loop


def warm_up(loop, sync, iters: int, min_s: float) -> int:
    """At least `iters` iterations, and iterations for at least `min_s` seconds after the
    first one (which may record a CUDA graph or finish a compile), in whole chunks of
    `iters`, each ended by a device synchronize: ten iterations of a host-bound model last
    about a millisecond, too short for the cores' clocks (and caches) to settle: the
    timing windows would then keep getting faster (run_metrics.untraced_last_window_ratio).
    Returns the iterations run."""
    done, chunk = 0, max(iters, 1)
    if iters or min_s:
        loop(1)
        sync()
        done = 1
    t0 = time.perf_counter()
    while done < iters or time.perf_counter() - t0 < min_s:
        n = iters - done if done < iters else chunk
        loop(n)
        done += n
        sync()
    sync()
    return done


def window(loop, sync, iters: int) -> float:
    """Wall time per iteration (ms) of loop(iters), between two device synchronizes."""
    sync()
    t0 = time.perf_counter()
    loop(iters)
    sync()
    return (time.perf_counter() - t0) * 1e3 / iters


@contextlib.contextmanager
def gc_paused():
    """Python's garbage collector collected once, then paused until the block ends (a
    collection inside a timing window is noise, not the variant's cost)."""
    import gc
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


class Until:
    """When paired windows stop: the first `windows` pairs always run; then pairs are added
    until the paired ratio's 95% CI (pair_ratio_ci) is within `ci` of it (relative
    half-width), or the pairs have taken `max_s` seconds, or `max_windows` pairs ran.
    After the windows, `reason` says which: ci, time_cap, max_windows (or fixed: no target)."""

    def __init__(self, ci: float = 0.0, max_s: float = 0.0, max_windows: int = 0):
        self.ci, self.max_s, self.max_windows = ci, max_s, max_windows
        self.reason = "fixed"

    def done(self, out, eager, elapsed_s: float) -> bool:
        if not self.ci:
            return True
        half = ci_half_width(out, eager)
        if half is not None and half <= self.ci:
            self.reason = "ci"
        elif self.max_s and elapsed_s >= self.max_s:
            self.reason = "time_cap"
        elif self.max_windows and len(out) >= self.max_windows:
            self.reason = "max_windows"
        else:
            return False
        return True


def time_windows(loop, sync, windows: int, iters: int, probe=None, probe_ms: list | None = None,
                 check: "HostCheck | None" = None) -> list[float]:
    """Wall time per iteration (ms) of `windows` windows of `iters` iterations, each ended
    by a device synchronize, with Python's garbage collector paused. No NVTX range or
    record_function is opened inside: nothing here is traced or annotated. With a `probe`
    (host_probe.make_probe), the host's speed is timed before the first window and after
    each one, outside the windows, into `probe_ms` (windows + 1 values). With a `check`,
    windows timed while the host was disturbed are discarded and timed again (HostCheck)."""
    return time_paired_windows(loop, None, sync, windows, iters, probe, probe_ms, check=check)[0]


class HostCheck:
    """Each block of windows judged by the host's state while it ran: pairs of windows
    are grouped into blocks of at least BLOCK_S seconds (the kernel counts CPU time in
    ticks of 10 ms), and a block during which the host's other processes kept more than
    `threshold` cores busy (jobs.host_gate.CpuMeter; DISTURBED_CORES plus
    PER_MEASURER for each other process measuring beside this one) is disturbed: its
    pairs are discarded and timed again, at most MAX_RETIMED_FACTOR x the windows asked
    for (past that they are kept, and counted as kept disturbed; with retime False, on the
    CPU, whose kernels are the host's own work, none is discarded: the states are recorded). `gate` (host_gate.quiet's)
    is refreshed between blocks. `record()` is the run's `host_check`. A block is judged
    early once the windows asked for are reached, with an allowance for the ticks."""

    BLOCK_S = 0.1
    DISTURBED_CORES = 1.0
    PER_MEASURER = 1.5
    MAX_RETIMED_FACTOR = 2

    def __init__(self, meter, gate=None, windows: int = 0, retime: bool = True):
        self.meter, self.gate = meter, gate
        self.max_discarded = self.MAX_RETIMED_FACTOR * max(windows, 1) if retime else 0
        self.blocks = []      # one dict per judged block: pairs, seconds, other_busy_cores, kept, disturbed
        self._t0 = None

    def threshold(self) -> float:
        others = self.gate.other_measurers() if self.gate is not None else 0
        return self.DISTURBED_CORES + self.PER_MEASURER * others

    def open(self) -> None:
        if self._t0 is None:
            self._t0 = time.perf_counter()
            self.meter.start()

    def judge(self, pairs: int, final: bool = False) -> bool | None:
        """Whether the block of `pairs` pairs since open() is kept; None while it is
        shorter than BLOCK_S (unless `final`)."""
        span = time.perf_counter() - self._t0
        if span < self.BLOCK_S and not final:
            return None
        # the kernel counts CPU time (/proc/stat and this process's own) in ticks: allow
        # three ticks' worth over the span
        cores, limit = self.meter.cores(), self.threshold() + 3.0 / (self.meter.hz * max(span, 1e-3))
        disturbed = cores is not None and cores > limit
        discarded = sum(b["pairs"] for b in self.blocks if not b["kept"])
        kept = not disturbed or discarded + pairs > self.max_discarded
        self.blocks.append({"pairs": pairs, "seconds": round(span, 4),
                            "other_busy_cores": None if cores is None else round(cores, 3),
                            "threshold_cores": round(limit, 2), "disturbed": disturbed, "kept": kept})
        self._t0 = None
        if self.gate is not None:
            self.gate.refresh()
        return kept

    def record(self) -> dict:
        b = self.blocks
        cores = [x["other_busy_cores"] for x in b if x["other_busy_cores"] is not None]
        return {"blocks": len(b), "disturbed_blocks": sum(x["disturbed"] for x in b),
                "pairs_discarded": sum(x["pairs"] for x in b if not x["kept"]),
                "disturbed_pairs_kept": sum(x["pairs"] for x in b if x["kept"] and x["disturbed"]),
                "other_busy_cores_max": max(cores) if cores else None,
                "other_busy_cores_median": statistics.median(cores) if cores else None,
                "block_states": b,
                "gate": dict(self.gate.info) if self.gate is not None else None}


def time_paired_windows(loop, eager_loop, sync, windows: int, iters: int, probe=None,
                        probe_ms: list | None = None, until: Until | None = None,
                        check: HostCheck | None = None) -> tuple[list[float], list[float]]:
    """time_windows, with (unless eager_loop is None) as many windows of eager between the
    variant's, in pairs ordered variant-eager, eager-variant, variant-eager, ... (the
    order alternates, so a drift within the process favours neither). The probe runs
    before the first window and after each of the variant's. With `until` (and eager),
    pairs are added past `windows` as Until says. With `check` (HostCheck), pairs of a
    block timed while the host was disturbed are discarded and timed again. Returns
    (variant windows, eager windows), ms per iteration: the kept ones."""
    out, eager = [], []
    pending = []   # pairs of the block not judged yet: (variant ms, eager ms or None, probe after)
    t0 = time.perf_counter()
    with gc_paused():
        if probe is not None:
            probe_ms.append(probe())
        i = 0
        while True:
            if check is not None:
                check.open()
            v = e = p = None
            for which in (("variant", "eager") if i % 2 == 0 else ("eager", "variant")):
                if which == "eager":
                    if eager_loop is not None:
                        e = window(eager_loop, sync, iters)
                else:
                    v = window(loop, sync, iters)
                    if probe is not None:
                        p = probe()
            i += 1
            pending.append((v, e, p))
            enough = len(out) + len(pending) >= windows
            kept = True if check is None else check.judge(len(pending), final=enough)
            if kept is None:
                continue
            if kept:
                for v, e, p in pending:
                    out.append(v)
                    if eager_loop is not None:
                        eager.append(e)
                    if probe is not None:
                        probe_ms.append(p)
            pending = []
            if len(out) >= windows and (eager_loop is None or until is None
                                        or until.done(out, eager, time.perf_counter() - t0)):
                break
    return out, eager


def harness_cost(make_loop_of, sync, iters: int, windows: int = 3) -> float:
    """The timing's own cost, in microseconds per iteration: the median of `windows`
    windows of make_loop_of(a variant that does nothing), timed as the variant's are."""
    def nothing(*_):
        return None
    loop = make_loop_of(nothing)
    loop(1)
    with gc_paused():
        return statistics.median(window(loop, sync, iters) for _ in range(max(windows, 1))) * 1e3


def paired_speedup(windows: list[float], eager_windows: list[float]) -> float | None:
    """Eager's median window / the variant's, both timed in this process
    (time_paired_windows). The ratio of the medians, not the median of each pair's ratio:
    a pair's two windows can straddle a change of the host's speed, and the ratio of
    medians varies less across processes (benchmarks/results/h100-noise)."""
    w, e = [x for x in windows if x], [x for x in eager_windows if x]
    return statistics.median(e) / statistics.median(w) if w and e else None


def _log_ratios(windows, eager) -> list[float]:
    return [math.log(e / v) for v, e in zip(windows, eager) if v and e]


def pair_ratio_ci(windows: list[float], eager_windows: list[float]) -> tuple[float, float] | None:
    """95% CI of the paired ratio: a Student t interval on the pairs' log(eager / variant),
    exponentiated; None for fewer than 2 pairs."""
    r = _log_ratios(windows, eager_windows)
    if len(r) < 2:
        return None
    m, half = statistics.fmean(r), t95(len(r) - 1) * statistics.stdev(r) / math.sqrt(len(r))
    return math.exp(m - half), math.exp(m + half)


def ci_half_width(windows, eager_windows) -> float | None:
    """pair_ratio_ci's relative half-width (exp of the log half-width, less 1); None
    for fewer than 2 pairs."""
    ci = pair_ratio_ci(windows, eager_windows)
    return None if ci is None else math.sqrt(ci[1] / ci[0]) - 1


def pair_probes(probe_ms: list[float], pairs: int) -> list[float | None]:
    """The host probe around each pair: the mean of the probe before its variant window
    and the one after it (time_paired_windows' probe_ms has pairs + 1 values)."""
    p = list(probe_ms or [])
    return [(p[i] + p[i + 1]) / 2 if i + 1 < len(p) and p[i] and p[i + 1] else None for i in range(pairs)]


def host_states(windows: list[float], eager_windows: list[float], probe_ms: list[float]) -> dict:
    """The paired ratio at the host's fast and slow states (module doc): pairs whose probe
    is within HOST_STATE_TOL of the fastest pair's are fast, the others slow.
    paired_host_sensitive: both states occurred and their ratios differ by more than
    HOST_SENSITIVE_GAP (the paired value then mixes two speedups; read the fast one)."""
    probes = pair_probes(probe_ms, len(windows))
    known = [p for p in probes if p]
    out = {"paired_speedup_fast_host": None, "paired_speedup_slow_host": None,
           "host_state_pairs": None, "paired_host_sensitive": None}
    if not known or not eager_windows:
        return out
    cut = min(known) * (1 + HOST_STATE_TOL)
    fast = [i for i, p in enumerate(probes) if p and p <= cut]
    slow = [i for i, p in enumerate(probes) if p and p > cut]

    def ratio(idx):
        return paired_speedup([windows[i] for i in idx], [eager_windows[i] for i in idx]) if idx else None
    f, s = ratio(fast), ratio(slow)
    out.update(paired_speedup_fast_host=f, paired_speedup_slow_host=s,
               host_state_pairs={"fast": len(fast), "slow": len(slow)},
               paired_host_sensitive=bool(f and s and abs(math.log(f / s)) > math.log1p(HOST_SENSITIVE_GAP)))
    return out
