"""Tidy tables of a sweep, built only from per-run files, so they regenerate anywhere.

- runs:      one row per run (model, variant, batch, size, mode, dtype, repeat,
             backend, device; `size` the label of the model's other sizes, core.sizes,
             and one column per size axis: dim, num_layers, ...) with status, reason, every metric, the model's cost (FLOPs, bytes)
             and the roofline quantities:
             achieved_bandwidth_Bps = bytes_fused / GPU busy time per iteration
               (gpu_busy_per_iter_ms: kernels that overlap count once; records without
               it: summed kernel time; CPU backend: CPU kernel time): the least traffic
               the computation needs, per second,
             copy_bandwidth_frac    = achieved_bandwidth_Bps / the device's measured copy
               bandwidth (jobs.peaks),
             achieved_flops         = (flops + flops_pointwise) / GPU busy time (matmul and
               pointwise FLOPs, experiments.cost); flops_frac against the measured matmul
               rate; arithmetic_intensity = (flops + flops_pointwise) / bytes_fused.
- metrics_long: the same in long format (one row per run and metric).
- speedups:  one row per (model, batch, size, mode, dtype, backend, device, variant), over the
             repeats: medians with 95% bootstrap CIs, CV and the `noisy` flag (wall time:
             the untraced timing of analysis.run.run_metrics, never a traced one; the median
             profiler_overhead beside it)
             (analysis.sweep.stats), speedup over eager (wall and GPU) with CIs, the paired
             speedup (speedup_paired: eager timed in the variant's own process) with its
             CI, cv_paired and noisy_paired, host_moved (see host_moved), the median host_slowdown of
             the variant's runs and of eager's (eager_host_slowdown), kernel reduction,
             and compile cost as the Inductor harness defines it:
             compilation_latency_s (first call of the variant - first call of eager; of the
             cold compiles where there are any, `compile_cache` says which) and
             compression_ratio (eager peak memory / variant peak memory).
             Runs that are not ok (incorrect, oom, error, unsupported) get no speedup; their
             status is listed, never dropped.
- crossover: per (model, variant, ...) and swept axis (batch, dim, num_layers, ...; the
             other axes held at the values in `fixed`): where the variant starts to beat
             eager (the headline wall-time speedup crosses 1 from below: paired where
             every value was paired, `speedup_source` says) and where it stops (the last
             such interval; `spans` lists them all: '128-362, 1563+'); `ties`:
             the values where the speedup's 95% CI includes 1 (not distinguishable).
- breakdown: (tables/speedup_breakdown.csv) where each speedup comes from, one row per
             configuration and part (analysis.sweep.decompose).
- scaling:   (tables/scaling.csv) the scaling law t = a + b * size^k per (model, variant,
             ...), swept axis with 3 or more values and metric (analysis.sweep.scaling).
- kernels:   the fusion map: one row per run and kernel in the measured range, with its
             kind and the ops it computes (analysis.run.fusion), and its launch resources
             and theoretical occupancy (analysis.run.run_metrics).
- kernel_resources: (tables/kernel_resources.csv) one row per run and GPU kernel with
             launch resources, its run configuration's bandwidth and the over-fusion
             flags (analysis.sweep.overfusion).
"""
from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from fusionlab.analysis.run import kernel_stats
from fusionlab.analysis.sweep import stats
from fusionlab.analysis.run import run_metrics
from fusionlab.analysis.run.run_metrics import KEYS
from fusionlab.analysis.readers.trace import ReportError
from fusionlab.analysis.run import records
from fusionlab.core.io import atomic_path, load_json, read_csv, read_json  # noqa: F401  (read_json: the sweep layer's reader)
from fusionlab.core import sizes

ID = list(KEYS) + ["backend", "device"]
GROUP = ["model", "batch", "size", "mode", "dtype", "backend", "device"]
CROSSOVER = ["model", "variant", "mode", "dtype", "backend", "device", "axis", "fixed"]
METRICS = ["wall_time_per_iter_ms", "gpu_time_per_iter_ms", "cpu_kernel_time_per_iter_ms",
           "kernels_per_iter", "launch_calls_per_iter", "launch_overhead_ratio",
           "gpu_busy_fraction", "gpu_busy_per_iter_ms", "gpu_span_per_iter_ms", *kernel_stats.NAMES,
           "launch_api_us", "queue_us", "launch_delay_us", "short_kernel_share",
           "idle_host_wait_per_iter_ms", "idle_kernel_wait_per_iter_ms", "idle_other_per_iter_ms",
           "idle_host_wait_frac", "idle_kernel_wait_frac", "idle_other_frac",
           "untraced_wall_time_per_iter_ms", "untraced_wall_cv", "untraced_last_window_ratio",
           "untraced_last_probe_ratio", "host_probe_ms", "host_probe_cv", "host_slowdown", "paired_speedup",
           "paired_speedup_fast_host", "paired_speedup_slow_host", "harness_us_per_iter",
           "traced_wall_time_per_iter_ms",
           "profiler_overhead", "injected_wall_time_per_iter_ms", "injection_overhead",
           "runner_wall_time_per_iter_ms", "cuda_event_time_per_iter_ms",
           "compile_latency_s", "graph_breaks", "generated_kernels", "peak_memory_bytes", "max_abs_err",
           "flops", "flops_pointwise", "bytes_fused", "bytes_unfused", "achieved_bandwidth_Bps", "copy_bandwidth_frac",
           "achieved_flops", "flops_frac", "arithmetic_intensity"]
NOISE_CV = 0.05
# a run whose last untraced timing window is this much below the windows' median was
# still speeding up (run_metrics.untraced_last_window_ratio): its median overstates
STEADY_RATIO = 0.9
# a run whose host probe (run_metrics.host_probe_ms) took this much longer than the
# fastest of its sweep on the same host was timed while the host's CPU ran slow
HOST_SLOW = 1.3
# a speedup across processes this far (x or /) from the paired one was moved by the host's speed
PAIRED_GAP = 1.1


def read_metrics(path: str) -> dict:
    """A run's metrics.json; a file that cannot be read is the run's row with status
    error and a reason naming it (run_metrics.unreadable_row), never a stopped table."""
    try:
        row = load_json(path)
        if not isinstance(row, dict):
            raise ValueError("not a JSON object")
        return records.check(row, path)
    except (OSError, ValueError) as e:
        return run_metrics.unreadable_row(path, f"{path}: cannot be read ({type(e).__name__}: {str(e)[:200]})")
    except ReportError as e:
        return run_metrics.unreadable_row(path, str(e))


def runs_table(metric_files: list[str], costs: pd.DataFrame | None = None,
               peaks: dict | None = None) -> pd.DataFrame:
    df = pd.DataFrame([read_metrics(p) for p in metric_files])
    for c in ID + ["status", "reason", "bound"] + METRICS:
        if c not in df:
            df[c] = np.nan
    df = with_size(df)
    if costs is not None and len(costs):
        costs = with_size(costs)
        on = ["model", "batch", "size", "mode", "dtype"]
        cost_cols = [c for c in ("flops", "flops_pointwise", "bytes_fused", "bytes_unfused", "cost_method",
                                               "cost_error") if c in costs]
        df = df.drop(columns=[c for c in cost_cols if c in df]).merge(costs[on + cost_cols], on=on, how="left")
    # the GPU's busy time (kernels that overlap counted once; a record from before it was
    # kept: the summed kernel time), the CPU backend's operator time
    gpu = df["gpu_busy_per_iter_ms"].fillna(df["gpu_time_per_iter_ms"])
    t = (gpu.where(df["device"] == "cuda", df["cpu_kernel_time_per_iter_ms"])) / 1e3
    t = t.where(t > 0)
    df["achieved_bandwidth_Bps"] = df["bytes_fused"] / t
    fl_all = df["flops"].fillna(0) + (df["flops_pointwise"].fillna(0) if "flops_pointwise" in df else 0)
    fl_all = fl_all.where(fl_all > 0)
    df["achieved_flops"] = fl_all / t
    df["arithmetic_intensity"] = fl_all / df["bytes_fused"]
    bw = (peaks or {}).get("copy_bandwidth_Bps")
    fl = (peaks or {}).get("matmul_flops")
    df["copy_bandwidth_frac"] = df["achieved_bandwidth_Bps"] / bw if bw else np.nan
    df["flops_frac"] = df["achieved_flops"] / fl if fl else np.nan
    df["host_slowdown"] = host_slowdown(df)
    first = ID + size_axes(df) + ["status", "reason"]
    df = df[first + sorted(c for c in df.columns if c not in first)]   # the same order whatever the file order
    return df.sort_values(ID, ignore_index=True)


def host_slowdown(runs: pd.DataFrame) -> pd.Series:
    """Each run's host probe time / the fastest of the sweep's runs on the same host and
    device (1 = the host at its best seen speed; host_probe): above HOST_SLOW the run's
    host-bound wall time was inflated by its host, not by its variant."""
    if "host_probe_ms" not in runs or runs["host_probe_ms"].isna().all():
        return pd.Series(np.nan, index=runs.index)
    probe = runs["host_probe_ms"].where(runs["host_probe_ms"] > 0)
    keys = [runs[c].fillna("") if c in runs else pd.Series("", index=runs.index) for c in ("host", "device")]
    return probe / probe.groupby(keys).transform("min")


def size_axes(df: pd.DataFrame) -> list[str]:
    """The columns of a table that are model size axes (dim, num_layers, ...: the axes
    each run recorded, its `size_axes` column), in name order."""
    named = {a for v in df["size_axes"].dropna() for a in str(v).split(",") if a} if "size_axes" in df else set()
    if "size" in df:   # tables without the column: the axes the size labels name
        for label in df["size"].dropna().unique():
            try:
                named |= set(sizes.parse(str(label)))
            except ValueError:   # a label of another form names no axis here
                pass
    return sorted(a for a in named if a in df.columns)


def long_table(runs: pd.DataFrame) -> pd.DataFrame:
    present = [m for m in METRICS if m in runs]
    long = runs.melt(id_vars=ID + size_axes(runs) + ["status"], value_vars=present, var_name="metric", value_name="value")
    return long.dropna(subset=["value"]).reset_index(drop=True)


def with_size(df: pd.DataFrame) -> pd.DataFrame:
    """df with a `size` column ("default" where absent: tables written before size axes)."""
    return df.assign(size=df["size"].fillna("default")) if "size" in df else df.assign(size="default")


def group_key(key) -> tuple:
    """A groupby key as a tuple that looks itself up: NaN as None (two NaN keys of one
    groupby are unequal floats, so a dict keyed by them never finds a NaN key again)."""
    key = key if isinstance(key, tuple) else (key,)
    return tuple(None if isinstance(k, float) and k != k else k for k in key)


def groups_by_key(df: pd.DataFrame, keys: list) -> dict:
    """df's groups by keys (NaN a key value of its own), each under group_key()."""
    return {group_key(k): g for k, g in df.groupby(keys, dropna=False, sort=False)}


def speedups(runs: pd.DataFrame, noise_cv: float = NOISE_CV) -> pd.DataFrame:
    rows = []
    runs = with_size(runs)
    ok = runs[runs["status"] == "ok"]
    eagers = groups_by_key(ok[ok["variant"] == "eager"], GROUP)
    paired_groups = set(groups_by_key(ok[ok["paired_speedup"].notna()], GROUP)) \
        if "paired_speedup" in ok else set()
    for key, g in runs.groupby(GROUP + ["variant"], dropna=False, sort=True):
        row = dict(zip(GROUP + ["variant"], key))
        row.update({a: g[a].dropna().iloc[0] if g[a].notna().any() else np.nan for a in size_axes(g)})
        if size_axes(g):
            row["size_axes"] = ",".join(size_axes(g))
        good = g[g["status"] == "ok"]
        e = eagers.get(group_key(key[:-1]), ok.iloc[:0])
        row["repeats"] = len(g)
        row["repeats_ok"] = len(good)
        row["status"] = "ok" if (g["status"] == "ok").all() else ",".join(sorted(set(g["status"])))
        row["reason"] = "; ".join(sorted(set(g["reason"].dropna().astype(str))))[:300] or None
        for m in ("wall_time_per_iter_ms", "gpu_time_per_iter_ms", "kernels_per_iter"):
            x = good[m].dropna()
            row[m] = x.median() if len(x) else np.nan
            lo, hi = stats.median_ci(x)
            row[f"{m}_lo"], row[f"{m}_hi"] = lo, hi
            row[f"eager_{m}"] = e[m].median() if e[m].notna().any() else np.nan
        row["cv_wall"] = stats.cv(good["wall_time_per_iter_ms"])
        row["cv_gpu"] = stats.cv(good["gpu_time_per_iter_ms"])
        row["noisy"] = any(v > noise_cv for v in (row["cv_wall"], row["cv_gpu"]) if v == v)
        row["noise_cv_threshold"] = noise_cv
        for kind, m in (("wall", "wall_time_per_iter_ms"), ("gpu", "gpu_time_per_iter_ms")):
            row[f"speedup_{kind}"] = row[f"eager_{m}"] / row[m] if row[m] else np.nan
            lo, hi = stats.ratio_ci(e[m], good[m])
            row[f"speedup_{kind}_lo"], row[f"speedup_{kind}_hi"] = lo, hi
        # the speedup within each process (run_metrics.paired_speedup), over the repeats
        paired = good["paired_speedup"].dropna() if "paired_speedup" in good else pd.Series(dtype=float)
        if key[-1] == "eager" and len(good) and group_key(key[:-1]) in paired_groups:   # 1 where its variants paired
            paired = pd.Series(1.0, index=good.index)
        row["speedup_paired"] = paired.median() if len(paired) else np.nan
        row["speedup_paired_lo"], row["speedup_paired_hi"] = stats.median_ci(paired)
        row["cv_paired"] = stats.cv(paired)
        row["noisy_paired"] = bool(row["cv_paired"] > noise_cv)   # nan > x is False
        row["host_moved"] = host_moved(row)
        # the paired speedup at the host's fast and slow states (run_metrics), over the repeats
        for state in ("fast", "slow"):
            col = f"paired_speedup_{state}_host"
            x = good[col].dropna() if col in good else pd.Series(dtype=float)
            row[f"speedup_paired_{state}_host"] = x.median() if len(x) else np.nan
        sens = good["paired_host_sensitive"] if "paired_host_sensitive" in good else pd.Series(dtype=object)
        row["paired_host_sensitive"] = bool(sens.fillna(False).astype(bool).any())
        row["harness_us_per_iter"] = good["harness_us_per_iter"].median() \
            if "harness_us_per_iter" in good and good["harness_us_per_iter"].notna().any() else np.nan
        row["profiler_overhead"] = good["profiler_overhead"].median() if "profiler_overhead" in good and len(good) else np.nan
        for name, d in (("host_slowdown", good), ("eager_host_slowdown", e)):   # host_slowdown, medians
            row[name] = d["host_slowdown"].median() if "host_slowdown" in d and len(d) else np.nan
        row["kernel_reduction"] = row["eager_kernels_per_iter"] / row["kernels_per_iter"] \
            if row["kernels_per_iter"] else np.nan
        # eager compiles nothing: its first call against eager's own is noise, never a latency
        row["compilation_latency_s"], row["compile_cache"] = (np.nan, None) if key[-1] == "eager" \
            else compile_cost(good)
        pm, epm = good["peak_memory_bytes"].median(), e["peak_memory_bytes"].median()
        row["compression_ratio"] = epm / pm if (pm and pm == pm and epm == epm) else np.nan
        rows.append(row)
    return pd.DataFrame(rows).sort_values(GROUP + ["variant"], ignore_index=True)


def compile_cost(good: pd.DataFrame) -> tuple[float, str | None]:
    """compilation_latency_s of a variant's ok repeats and the cache state it was taken
    in: the median over the cold compiles where there are any (a later repeat compiles
    from Inductor's cache), else over all ('warm', 'mixed', or None without compile)."""
    if not len(good):
        return np.nan, None
    cache = good["compile_cache"] if "compile_cache" in good else pd.Series(index=good.index, dtype=object)
    cold = good[cache == "cold"]
    if len(cold):
        return cold["compile_latency_s"].median(), "cold"
    states = sorted(set(cache.dropna()))
    return good["compile_latency_s"].median(), "/".join(states) or None


def fixed_label(values: dict) -> str:
    """'batch=256 dim=1024': the other axes' values held fixed along one axis."""
    return " ".join(f"{k}={int(v) if float(v).is_integer() else v}" for k, v in values.items())


def parse_fixed_label(label) -> dict:
    """fixed_label's inverse: 'batch=256 dim=1024' -> {'batch': 256.0, 'dim': 1024.0}
    ({} for '' or nan, as a CSV round trip gives it)."""
    if not isinstance(label, str) or not label:
        return {}
    return {k: float(v) for k, v in (p.split("=", 1) for p in label.split())}


def along_axes(df: pd.DataFrame, keys: list[str], min_values: int = 2):
    """Yield (key, axis, fixed, rows) for every swept axis (batch, then the size axes): the
    rows of one `keys` group that share the other axes' values, where the axis takes at
    least `min_values` values. `fixed` labels those other values (fixed_label)."""
    axes = ["batch"] + size_axes(df)
    for key, g in df.groupby(keys, dropna=False, sort=True):
        present = [a for a in axes if g[a].notna().any()]
        for axis in present:
            others = [a for a in present if a != axis]
            groups = g.groupby(others, dropna=False, sort=True) if others else [((), g)]
            for vals, h in groups:
                if h[axis].nunique() >= min_values:
                    vals = vals if isinstance(vals, tuple) else (vals,)
                    yield key, axis, fixed_label(dict(zip(others, vals))), h


def host_moved(r) -> bool:
    """Whether a configuration's speedup across processes is more than PAIRED_GAP (x or /)
    from its paired one, and outside its own CI where it has one: most likely the host's
    speed, not the variant, moved it (eager's processes and the variant's ran at
    different speeds)."""
    wall, paired = r.get("speedup_wall"), r.get("speedup_paired")
    if r.get("variant") == "eager" or pd.isna(wall) or pd.isna(paired):
        return False
    lo, hi = r.get("speedup_wall_lo"), r.get("speedup_wall_hi")
    inside = pd.notna(lo) and lo <= paired <= hi
    return bool(abs(np.log(wall / paired)) > np.log(PAIRED_GAP) and not inside)


def headline_speedup(g: pd.DataFrame) -> tuple[str, str]:
    """The speedup column to read along one axis, and its name: speedup_paired where
    every configuration with a speedup was paired, else speedup_wall (across processes)."""
    if "speedup_paired" not in g:
        return "speedup_wall", "across processes"
    ran = g[g["speedup_wall"].notna() | g["speedup_paired"].notna()]
    if len(ran) and ran["speedup_paired"].notna().all():
        return "speedup_paired", "paired"
    return "speedup_wall", "across processes"


def crossover(sp: pd.DataFrame) -> pd.DataFrame:
    """Along every swept axis with 2 or more values (the other axes held fixed): where each
    variant starts and stops beating eager (stats.crossover), from the headline speedup
    (headline_speedup; `speedup_source` says which)."""
    keys = CROSSOVER[:6]
    rows = []
    for key, axis, fixed, g in along_axes(sp[sp["variant"] != "eager"], keys):
        col, source = headline_speedup(g)
        lo, hi = (g[f"{col}_{b}"] if f"{col}_{b}" in g else pd.Series(np.nan, index=g.index) for b in ("lo", "hi"))
        start, stop, note = stats.crossover(g[axis], g[col], axis=axis, lo=lo, hi=hi)
        rows.append({**dict(zip(keys, key)), "axis": axis, "fixed": fixed, "starts_at": start,
                     "stops_at": stop, "spans": stats.spans(g[axis], g[col]), "note": note,
                     "ties": " ".join(str(int(x)) for x in stats.ties(g[axis], lo, hi)),
                     "values": " ".join(str(int(x)) for x in sorted(g[axis])), "speedup_source": source})
    return pd.DataFrame(rows, columns=CROSSOVER + ["starts_at", "stops_at", "spans", "note", "ties", "values",
                                                   "speedup_source"])


def kernels_table(pairs: list[tuple[str, str]]) -> pd.DataFrame:
    """The per-run kernels.csv files (with the run's metrics.json for its keys)."""
    frames = []
    for metrics_json, kernels_csv in pairs:
        row = read_metrics(metrics_json)
        try:
            k = read_csv(kernels_csv)
        except (pd.errors.EmptyDataError, FileNotFoundError):
            continue
        except (pd.errors.ParserError, UnicodeDecodeError, ValueError, OSError) as e:
            print(f"fusionlab: {kernels_csv}: cannot be read ({type(e).__name__}: {str(e)[:200]}); "
                  f"its run's kernels are left out of kernels.csv", file=sys.stderr)
            continue
        if k.empty:
            continue
        for c in reversed(ID):
            k.insert(0, c, row.get(c))
        frames.append(k)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=ID + ["name"])


def write(df: pd.DataFrame, csv: str, parquet: str | None = None) -> None:
    with atomic_path(csv) as tmp:
        df.to_csv(tmp, index=False)
    if parquet:
        with atomic_path(parquet) as tmp:
            df.to_parquet(tmp, index=False)
