"""Metrics of one run: run.json (what the runner recorded) + its profile (+ timing.json, the
untraced timing process of an nsys run) -> metrics.json,
and the run's kernels in the measured range -> kernels.csv (analysis.run.metrics.kernel_table,
annotated with analysis.run.fusion: the fusion map; from Inductor's provenance output,
analysis.run.provenance, where the run kept its compile_debug folder; ops_source and the
run's fusion_source say which). An nsys export is streamed (nsys_sqlite.scan,
analysis.run.stream), never loaded row by row. kernels.csv has one row per distinct kernel,
at most KERNEL_ROWS (those with the most GPU time); kernels_csv_note says when it kept
fewer than there were. Its launch resource columns (nsys runs; empty on the CPU and
torch.profiler paths) describe the kernel's launches in the measured range that carry the
most GPU time (metrics.launch_configs): registers_per_thread, static_smem_bytes,
dynamic_smem_bytes, local_mem_per_thread_bytes (register spills: local memory > 0),
block_threads, grid_blocks, theoretical_occupancy (0..1) and occupancy_limited_by
(analysis.run.occupancy, from the GPU's limits in the same report).

Wall time (the headline, and every speedup built on it) is never taken under tracing:
- wall_time_per_iter_ms: median of the untraced timing windows (runner.timing.time_windows): of
  timing.json for nsys runs (a process with no profiler), of run.json for torch.profiler
  runs (timed before the profiler starts); untraced_wall_cv is their CV.
- untraced_last_window_ratio: the last untraced window / their median. Below
  tables.STEADY_RATIO the process was still speeding up when it stopped timing (a
  warm-up too short for it), so its median is above its steady state: the summary lists
  those runs, unless untraced_last_probe_ratio (the host probe after the last window /
  the probes' median) is below it too: then the host got faster, not the process.
- host_probe_ms, host_probe_cv: the median and CV of the host probe beside the untraced
  windows (jobs.host_probe: ms per pass of fixed CPU-only PyTorch work): how fast
  the host's CPU was while the run was timed.
- paired_speedup: eager's median window / the variant's, both timed in the untraced
  process (config paired_eager; runner.timing.time_paired_windows): a
  speedup the host's changing speed between processes does not move.
- paired_speedup_fast_host, paired_speedup_slow_host: the paired speedup over the pairs
  timed at the host's fast state and at its slow one (the host probe around each pair);
  paired_host_sensitive: both states occurred and the two differ by over 5% (a
  host-bound side beside a GPU-bound one: the paired value mixes two speedups and the
  host's speed does not cancel in it); paired_stop: why the pairs stopped (ci: the
  ratio's 95% CI was tight; time_cap, max_windows; fixed).
- windows_retimed, windows_disturbed_kept, host_busy_cores_max, gate_stopped, gate_roots:
  the untraced process's host check (runner.timing.HostCheck, jobs.host_gate): pairs of
  windows discarded and timed again because the host's other processes kept more cores
  busy than allowed while they ran, disturbed pairs kept past the cap, the most cores
  other processes kept busy during a kept block, and how many of the sweep's processes
  the gate held stopped while the windows ran (gate_roots: the sweeps registered on the
  host; 0: nothing was paused, as under SLURM or off a GPU).
- harness_us_per_iter: the timing loop's own cost per iteration (the same windows over a
  variant that does nothing; runner.timing.harness_cost).
- traced_wall_time_per_iter_ms: the measured range's wall time per iteration in the trace.
- profiler_overhead = traced / untraced wall time per iteration (the profiler's own cost).
- injected_wall_time_per_iter_ms, injection_overhead: the nsys process's windows timed
  before its capture range opened (nsys loaded, not tracing) / untraced.
Kernel metrics (counts, GPU time, launch path, idle) come from the traced range, with
every thread of the process counted (attribution `process`, analysis.run.metrics).
Compile fields (compile_latency_s, graph_breaks, generated_kernels, compile_cache) come
from the run's first process: timing.json where there is one (the nsys process starts
after it, from the compile caches it filled), else run.json. compile_cache: `cold` (every
graph compiled), `warm` (every graph from Inductor's FX graph cache), `mixed`, or empty
(no compile, or a record from before the runner counted cache hits). compile_latency_s is
empty for eager (it compiles nothing; its first call is warm after the check's eager one).

A run whose experiment failed keeps its status and reason; a profile that cannot be
read turns the run's status to `error` with the one-line reason. Neither raises, so
the analysis of the other runs goes on.
"""
from __future__ import annotations

import os

import pandas as pd

from fusionlab.analysis.run import fusion, metrics, provenance, records
from fusionlab.analysis.readers import nsys_sqlite, torch_trace
from fusionlab.analysis.readers.trace import ReportError
from fusionlab.core import axes
from fusionlab.core import ranges as R
from fusionlab.core.io import atomic_path, load_json, load_json_object, write_json_atomic

KERNEL_ROWS = 10_000   # kernels.csv rows at most (module doc)
KEYS = ("model", "variant", "batch", "size", "mode", "dtype", "repeat")


def load_profile(path: str):
    """An nsys SQLite export opened for streaming (nsys_sqlite.Report), or a Trace from a
    torch.profiler Chrome trace; analysis.run.metrics takes either. ReportError (one line) for
    a path that is not a file of either kind."""
    if not os.path.exists(path):
        raise ReportError(f"{path}: no such file")
    if path.endswith((".sqlite", ".db")):
        return nsys_sqlite.scan(path)
    if path.endswith(".json"):
        return torch_trace.load(path)
    raise ReportError(f"{path}: unknown profile type (expected .sqlite or a torch trace .json)")


def _read(path: str) -> dict:
    """The JSON object at path; ReportError (one line naming the file) when it cannot be read."""
    return records.check(load_json_object(path, ReportError), path)


def unreadable_row(path: str, reason: str, backend: str | None = None) -> dict:
    """The row of a run whose own files cannot be read: its keys from its folder's path
    (core.axes.run_keys), status error and the reason naming the file."""
    keys = axes.run_keys(os.path.dirname(os.path.abspath(path))) or {}
    row = {k: keys.get(k) for k in KEYS}
    row.update(backend=backend or keys.get("backend"), status="error", reason=reason)
    return row


NAMED = ("model", "variant", "batch")   # the keys every run.json names


def same_run(run: dict, run_json: str) -> None:
    """ReportError where run.json, in a run folder of the sweep's layout (core.axes.run_keys),
    lacks one of NAMED or names another run than its folder does (a record copied into
    another run's folder would be counted as that run)."""
    folder = axes.run_keys(os.path.dirname(os.path.abspath(run_json)))
    if folder is None:
        return
    for k in KEYS:
        have = run.get(k)
        if have is None and k in NAMED:
            raise ReportError(f"{run_json}: no {k} (its folder is {k} {folder[k]!r}'s)")
        if k == "size":
            have = have or "default"      # core.sizes' label where run.json has none
        if have is not None and have != folder[k]:
            raise ReportError(f"{run_json}: {k} {have!r}, but it is in the folder of {k} {folder[k]!r}")


# the untraced process's paired-timing fields (runner.timing.host_states, Until)
PAIRED_FIELDS = ("paired_speedup_fast_host", "paired_speedup_slow_host", "paired_host_sensitive", "paired_stop")


def timing_fields(run: dict, timing: dict | None, traced_wall_ms: float | None) -> dict:
    """The wall-time fields of the module doc: untraced from timing.json (nsys runs) or
    run.json (torch runs), traced from the trace's measured range (traced_wall_ms)."""
    t = run.get("timing") or {}
    untraced = (timing.get("timing") or {}) if timing is not None else t
    u = untraced.get("untraced_wall_time_per_iter_ms")
    injected = t.get("window_median_ms") if t.get("windows_context") == "nsys-injected" else None
    return {"wall_time_per_iter_ms": u, "untraced_wall_time_per_iter_ms": u,
            "untraced_wall_cv": untraced.get("window_cv") if u is not None else None,
            "untraced_last_window_ratio": last_window_ratio(untraced.get("windows_ms")) if u is not None else None,
            "untraced_last_probe_ratio": last_window_ratio(untraced.get("host_probe_ms")) if u is not None else None,
            **probe_fields(untraced.get("host_probe_ms")),
            "paired_speedup": untraced.get("paired_speedup") if u is not None else None,
            **{k: untraced.get(k) if u is not None else None for k in PAIRED_FIELDS},
            "harness_us_per_iter": untraced.get("harness_us_per_iter") if u is not None else None,
            **host_check_fields((timing or run).get("host_check") if u is not None else None),
            "untraced_cpus": ",".join(map(str, (timing or run).get("cpus") or [])) or None,
            "traced_wall_time_per_iter_ms": traced_wall_ms,
            "profiler_overhead": _ratio(traced_wall_ms, u),
            "injected_wall_time_per_iter_ms": injected,
            "injection_overhead": _ratio(injected, u)}


def host_check_fields(check: dict | None) -> dict:
    """The host check's fields of the module doc (None where the run has no host check)."""
    c = check or {}
    kept = [b.get("other_busy_cores") for b in c.get("block_states") or [] if b.get("kept")]
    kept = [x for x in kept if x is not None]
    gate = c.get("gate") or {}
    return {"windows_retimed": c.get("pairs_discarded"), "windows_disturbed_kept": c.get("disturbed_pairs_kept"),
            "host_busy_cores_max": max(kept) if kept else None,
            "gate_stopped": gate.get("stopped"), "gate_roots": gate.get("roots")}


def probe_fields(probe_ms) -> dict:
    """host_probe_ms (median) and host_probe_cv of the host probe's times; None without."""
    p = pd.Series([x for x in (probe_ms or []) if x is not None], dtype=float)
    if p.empty:
        return {"host_probe_ms": None, "host_probe_cv": None}
    return {"host_probe_ms": float(p.median()),
            "host_probe_cv": float(p.std() / p.mean()) if len(p) > 1 and p.mean() > 0 else None}


def last_window_ratio(windows_ms) -> float | None:
    """The last timing window / the windows' median; None for fewer than 3 windows."""
    w = [x for x in (windows_ms or []) if x is not None]
    if len(w) < 3:
        return None
    med = float(pd.Series(w).median())
    return w[-1] / med if med > 0 else None


def compile_fields(run: dict, timing: dict | None) -> dict:
    """The compile fields of the module doc, from the run's first process."""
    first = timing if (timing is not None and "compile_latency_s" in timing) else run
    c = first.get("compile") or {}
    hits, misses = c.get("fx_graph_cache_hits"), c.get("fx_graph_cache_misses")
    cache = (None if hits is None or not (hits or misses) else
             "mixed" if hits and misses else "warm" if hits else "cold")
    latency = None if run.get("variant") == "eager" else first.get("compile_latency_s")
    return {"compile_latency_s": latency, "graph_breaks": c.get("graph_breaks"),
            "generated_kernels": c.get("generated_kernels"), "compile_cache": cache}


def _ratio(a, b):
    return a / b if (a is not None and b) else None


def compute(run_json: str, profile: str | None, backend: str,
            timing_json: str | None = None) -> tuple[dict, pd.DataFrame]:
    """The run's metrics row and its kernels; a run whose records hold what no run writes
    (a part of another type than records.check knows of) is an error row naming them."""
    try:
        return _compute(run_json, profile, backend, timing_json)
    except (AttributeError, KeyError, TypeError) as e:
        files = " and ".join(f for f in (run_json, timing_json) if f)
        reason = f"{files}: cannot be analysed ({type(e).__name__}: {' '.join(str(e).split())[:200]})"
        return unreadable_row(run_json, reason, backend), pd.DataFrame()


def _compute(run_json: str, profile: str | None, backend: str,
             timing_json: str | None = None) -> tuple[dict, pd.DataFrame]:
    try:
        run = _read(run_json)
        timing = _read(timing_json) if timing_json else None
        same_run(run, run_json)
    except ReportError as e:
        return unreadable_row(run_json, str(e), backend), pd.DataFrame()
    row = {k: run.get(k) for k in KEYS}
    row["size"] = row["size"] or "default"   # core.sizes label; "default" where run.json has none
    row.update({k: v for k, v in (run.get("sizes") or {}).items() if k not in row})   # dim, num_layers, ...
    row["size_axes"] = ",".join(sorted(k for k in (run.get("sizes") or {}) if k in row))
    row.update(backend=backend, device=run.get("device"), status=run.get("status", "error"),
               reason=run.get("reason"), gpu=run.get("gpu"),
               torch=(run.get("versions") or {}).get("torch"),
               nsys=(run.get("versions") or {}).get("nsys"),
               # the host of the process that ran the probe (on SLURM, maybe not the nsys one's)
               host=((timing or run).get("versions") or {}).get("host"),
               paired_eager_error=(timing or run).get("paired_eager_error"),
               correct=(run.get("correctness") or {}).get("passed"),
               max_abs_err=(run.get("correctness") or {}).get("max_abs_err"),
               peak_memory_bytes=run.get("peak_memory_bytes"),
               runner_wall_time_per_iter_ms=(run.get("timing") or {}).get("measure_wall_time_per_iter_ms"),
               cuda_event_time_per_iter_ms=(run.get("timing") or {}).get("cuda_event_time_per_iter_ms"),
               measure_iters=run.get("measure_iters"))
    row.update(compile_fields(run, timing))
    if row["status"] == "ok" and not run.get("timing"):
        row.update(status="error", reason=f"{run_json}: status ok but no timing (a run that measured records one)")
    if timing is not None and row["status"] == "ok" and timing.get("status") != "ok":
        row.update(status=timing.get("status", "error"),
                   reason=f"untraced timing process: {timing.get('reason')}")
    kernels = pd.DataFrame()
    if row["status"] != "ok" or profile is None:
        return row, kernels
    try:
        trace = load_profile(profile)
        target = (R.MEASURE, R.DOMAIN)
        views, tables = metrics.views(trace, [target], ("process",), [(*target, "process")])
        m = views[f"{R.DOMAIN}:{R.MEASURE}"]["process"]
        if not m.get("instances"):
            raise ReportError(f"{profile}: no '{R.DOMAIN}:{R.MEASURE}' NVTX range in the profile")
    except ReportError as e:
        row.update(status="error", reason=str(e))
        return row, kernels
    traced_wall = m.pop("wall_time_per_iter_ms")   # the trace's own measured range
    row.update({k: v for k, v in m.items() if k not in ("range", "domain", "instances")})
    row.update(timing_fields(run, timing, traced_wall))
    row["profiler_version"] = trace.tool_version
    kernels = tables[(*target, "process")]
    if len(kernels) > KERNEL_ROWS:    # one row per distinct kernel: huge only for generated names
        row["kernels_csv_note"] = (f"kernels.csv keeps the {KERNEL_ROWS} kernels with the most GPU time "
                                   f"of {len(kernels)} distinct kernels")
        kernels = kernels.head(KERNEL_ROWS)
    kernels = provenance.annotate(fusion.annotate(kernels), provenance.kernel_ops(debug_dir(run_json, run)))
    row["fusion_source"] = "provenance" if (kernels.get("ops_source", pd.Series(dtype=str)) == "provenance").any() \
        else "name"
    return metrics.clean(row), kernels


def debug_dir(run_json: str, run: dict) -> str | None:
    """The run's kept provenance: its TORCH_COMPILE_DEBUG folder, compile_debug/ beside
    run.json (results copied elsewhere), else the path the runner recorded, else the
    inductor/ folder the runner keeps by default (runner.introspect.CompileLogs)."""
    here = os.path.join(os.path.dirname(os.path.abspath(run_json)), "compile_debug")
    if os.path.isdir(here):
        return here
    kept = os.path.join(os.path.dirname(os.path.abspath(run_json)), "inductor")
    return (run.get("compile_debug") or {}).get("dir") or (kept if os.path.isdir(kept) else None)


KERNEL_FILE_COLUMNS = ["name", "kind", "ops", "n_ops", "ops_source", "fx_nodes", "calls_per_iter",
                       "time_per_iter_us", "median_us", "calls", "total_us", *metrics.RESOURCE_TABLE_COLUMNS,
                       "full_name"]


def main(run_json: str, profile: str | None, backend: str, out: str, kernels_out: str | None = None,
         timing_json: str | None = None) -> dict:
    row, kernels = compute(run_json, profile if profile and os.path.exists(profile) else None, backend,
                           timing_json)
    if kernels_out:
        with atomic_path(kernels_out) as tmp:
            kernels.reindex(columns=KERNEL_FILE_COLUMNS).to_csv(tmp, index=False)
    write_json_atomic(out, row)
    return row
