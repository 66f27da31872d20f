"""GPU machine: is the wall time the pipeline reports the wall time
of an untraced process, and are its speedups the untraced speedups?

For each configuration of the grid (GRID below), side by side on one machine:
- the pipeline: `snakemake all` (the real path: untraced timing process, nsys-traced
  process, export, metrics, tables) with `--repeats` processes per configuration; its
  tables/speedups.csv gives the median wall time per iteration and the speedup over eager;
- the reference: a plain Python process with no profiler loaded and no pinning (a user's
  own loop: build, warm up, time `--iters` iterations with perf_counter and a final
  synchronize), `--repeats` processes per configuration, interleaved over the grid.

    python benchmarks/untraced_timing.py sweep --results results/bench10 --repeats 5
    python benchmarks/untraced_timing.py reference --results results/bench10 --repeats 5
    python benchmarks/untraced_timing.py report --results results/bench10
    python benchmarks/untraced_timing.py windows --results results/bench10   # windows.csv, two paired estimators

Each step resumes where a previous call stopped (Snakemake's own resumption; the
reference CSV keeps its rows). `report` prints, per configuration: pipeline / reference
wall time (target within 5%), pipeline / reference speedup (within 5%), the traced wall
time / reference (the bias tracing adds), profiler_overhead,
injection_overhead (nsys loaded, capture range not yet open) and the CVs.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # the repository

# (sweep name, models, variants, batch sizes, mode): the full grid (FULL), and the
# part of it that fits a short device allocation (the default): the host-bound and the
# GPU-bound end of pointwise_heavy, the mlp case whose conclusion flipped, the train step
FULL = [
    ("inference", ["pointwise_heavy", "mlp"], ["eager", "compile", "compile_reduce_overhead"], [256, 2048], "inference"),
    ("matmul", ["matmul_heavy"], ["eager", "compile", "compile_reduce_overhead"], [1024], "inference"),
    ("train", ["deep_gelu_mlp"], ["eager", "compile"], [256], "train"),
]
# the two halves that each fit one device call (a machine is not kept between calls, so
# each half is measured side by side on one machine): A, the host-bound cases whose
# speedups the tracing distorted most; B, the train step and the GPU-bound end
GRIDS = {
    "a": [("pointwise", ["pointwise_heavy"], ["eager", "compile"], [256], "inference"),
          ("mlp", ["mlp"], ["eager", "compile"], [2048], "inference")],
    "b": [("train", ["deep_gelu_mlp"], ["eager", "compile"], [256], "train"),
          ("pointwise2048", ["pointwise_heavy"], ["eager", "compile"], [2048], "inference")],
    "c": [("train", ["deep_gelu_mlp"], ["eager", "compile"], [256], "train"),
          ("mlp", ["mlp"], ["eager", "compile"], [2048], "inference")],
    "d": [("mlp", ["mlp"], ["eager", "compile"], [2048], "inference")],
    "e": [("matmul", ["matmul_heavy"], ["eager", "compile", "compile_reduce_overhead"], [1024], "inference")],
    "f": [("cro", ["pointwise_heavy", "mlp"], ["eager", "compile_reduce_overhead"], [256, 2048], "inference")],
    "g": [("train", ["deep_gelu_mlp"], ["eager", "compile"], [256], "train")],
    "full": FULL,
}
SWEEPS = GRIDS[os.environ.get("FUSIONLAB_BENCH_GRID", "a")]
GRID = [(m, v, b, mode) for _, ms, vs, bs, mode in SWEEPS for m in ms for v in vs for b in bs]
WARMUP, ITERS = 50, 200


def sweep_config(results: str, name: str, repeats: int, windows: int) -> str:
    import yaml
    _, models, variants, batches, mode = next(s for s in SWEEPS if s[0] == name)
    path = os.path.join(results, f"{name}.yaml")
    os.makedirs(results, exist_ok=True)
    with open(path, "w") as f:
        yaml.safe_dump({"models": models, "variants": variants, "batch_sizes": batches, "mode": mode,
                        "warmup_iters": WARMUP, "measure_iters": ITERS, "repeats": repeats,
                        "timing_windows": windows, "results": os.path.join(results, name)}, f)
    return path


def cmd_sweep(a) -> int:
    rc = 0
    for name, *_ in SWEEPS:
        cfg = sweep_config(a.results, name, a.repeats, a.windows)
        t0 = time.time()
        subprocess.run([sys.executable, "-m", "snakemake", "--unlock", "--configfile", cfg], cwd=ROOT,
                       capture_output=True)
        # the pipeline as a user runs it: GPU slots (one measuring process per GPU, on
        # its own cores), post-processing beside it
        # streamed to the log as it runs: a sweep stopped at a device call's limit keeps its log
        with open(os.path.join(a.results, f"{name}.log"), "a") as f:
            p = subprocess.run([sys.executable, "-m", "snakemake", "all", "--configfile", cfg, "--cores",
                                str(a.cores), "--keep-going", "--rerun-incomplete", "--rerun-triggers", "mtime"],
                               cwd=ROOT, stdout=f, stderr=subprocess.STDOUT)
        print(f"sweep {name}: snakemake exit {p.returncode} in {time.time() - t0:.0f} s", flush=True)
        rc = rc or p.returncode
    return rc


def reference_loop(model: str, variant: str, batch: int, mode: str, warmup: int, iters: int,
                   warmup_min_s: float = 0.1, pairs: int = 5) -> tuple[float, float, float]:
    """A plain process's own measurement (no profiler, no NVTX, no pinning, none of the
    runner's timing code): ms per iteration of one loop of `iters` iterations; the host
    probe's ms per pass (jobs.host_probe), the median of one probe before and one
    after that loop (outside it); and, for a variant other than eager, its speedup over
    eager within this process: `pairs` pairs of loops of iters/pairs iterations, eager's
    and the variant's in alternating order, eager's median loop / the variant's (nan for
    eager)."""
    import copy
    import statistics

    import torch
    from fusionlab.jobs.host_probe import make_probe
    from fusionlab.experiments.registry import MODELS, VARIANTS
    from fusionlab.runner.timing import warm_up
    torch.manual_seed(0)
    train = mode == "train"
    net, inputs = MODELS[model].build(batch, torch.float32, "cuda")
    net.train(train)
    eager_net = copy.deepcopy(net)
    fn = VARIANTS[variant].apply(net, inputs, {"compile_mode": "default", "dtype": "float32",
                                               "device": "cuda", "mode": mode})

    def make_step(f, m):
        def step():
            if train:
                m.zero_grad(set_to_none=True)
                out = f(*inputs)
                outs = list(out) if isinstance(out, (list, tuple)) else [out]
                sum(o.float().mean() for o in outs).backward()
            else:
                with torch.no_grad():
                    f(*inputs)
        return step

    def loop(step, n):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        torch.cuda.synchronize()
        return (time.perf_counter() - t0) * 1e3 / n

    step = make_step(fn, net)
    warm_up(step, torch.cuda.synchronize, warmup, warmup_min_s)   # the runner's warm-up
    probe = make_probe(torch)
    before = probe()
    ms = loop(step, iters)
    host = statistics.median([before, probe()])
    if variant == "eager":
        return ms, host, float("nan")
    eager = make_step(eager_net, eager_net)
    warm_up(eager, torch.cuda.synchronize, warmup, warmup_min_s)
    n, es, vs = max(iters // pairs, 1), [], []
    for i in range(pairs):
        if i % 2 == 0:
            vs.append(loop(step, n))
            es.append(loop(eager, n))
        else:
            es.append(loop(eager, n))
            vs.append(loop(step, n))
    return ms, host, statistics.median(es) / statistics.median(vs)


def cmd_reference(a) -> int:
    import pandas as pd
    out = os.path.join(a.results, "reference.csv")
    done = pd.read_csv(out) if os.path.exists(out) else pd.DataFrame(columns=["model", "variant", "batch", "mode", "process"])
    have = {(r.model, r.variant, int(r.batch), r.mode, int(r.process)) for r in done.itertuples()}
    deadline = time.time() + a.budget_s
    for proc in range(a.repeats):   # interleaved: every configuration once, then again
        for model, variant, batch, mode in GRID:
            if (model, variant, batch, mode, proc) in have:
                continue
            if time.time() > deadline:
                print("reference: time budget reached; rerun to continue", flush=True)
                return 0
            p = subprocess.run([sys.executable, "-m", "fusionlab.bench.untraced_timing", "_loop", model, variant, str(batch), mode,
                                str(WARMUP), str(a.iters)], cwd=ROOT, capture_output=True, text=True)
            try:
                ms, probe, paired = map(float, p.stdout.strip().splitlines()[-1].split())
            except (ValueError, IndexError):
                print(f"reference {model}/{variant}/{batch}/{mode}: failed: {p.stderr[-500:]}", flush=True)
                ms = probe = paired = float("nan")
            row = dict(model=model, variant=variant, batch=batch, mode=mode, process=proc, ms_per_iter=ms,
                       host_probe_ms=probe, paired_speedup=paired)
            done = pd.concat([done, pd.DataFrame([row])], ignore_index=True)
            done.to_csv(out, index=False)
            print(f"reference {model}/{variant}/{batch}/{mode} #{proc}: {ms:.4f} ms", flush=True)
    return 0


def pipeline_rows(results: str):
    import pandas as pd
    frames = []
    for name, *_ in SWEEPS:
        f = os.path.join(results, name, "tables", "speedups.csv")
        r = os.path.join(results, name, "tables", "runs.csv")
        if os.path.exists(f):
            sp = pd.read_csv(f)
            runs = pd.read_csv(r)
            g = runs[runs.status == "ok"].groupby(["model", "variant", "batch", "mode"])
            extra = g.agg(traced_wall_ms=("traced_wall_time_per_iter_ms", "median"),
                          injection_overhead=("injection_overhead", "median"),
                          untraced_window_cv=("untraced_wall_cv", "median"),
                          **({"host_probe_ms": ("host_probe_ms", "median")} if "host_probe_ms" in runs else {})
                          ).reset_index()
            frames.append(sp.merge(extra, on=["model", "variant", "batch", "mode"], how="left"))
    return pd.concat(frames, ignore_index=True) if frames else None


def cmd_report(a) -> int:
    import pandas as pd
    sp = pipeline_rows(a.results)
    if sp is None or not os.path.exists(os.path.join(a.results, "reference.csv")):
        print("report: no pipeline tables or no reference.csv yet")
        return 1
    ref = pd.read_csv(os.path.join(a.results, "reference.csv"))
    agg = ref.groupby(["model", "variant", "batch", "mode"])["ms_per_iter"]
    r = agg.median().rename("ref_ms").to_frame().join(
        agg.apply(lambda x: statistics.stdev(x) / statistics.fmean(x) if len(x.dropna()) > 1 else float("nan"))
        .rename("ref_cv")).join(agg.count().rename("ref_processes")).reset_index()
    for col, name in (("host_probe_ms", "ref_host_probe_ms"), ("paired_speedup", "ref_paired_speedup")):
        if col in ref:   # rows from before the probe and the pairs have none
            r = r.merge(ref.groupby(["model", "variant", "batch", "mode"])[col].median()
                        .rename(name).reset_index(), on=["model", "variant", "batch", "mode"])
        else:
            r[name] = float("nan")
    r.loc[r.variant == "eager", "ref_paired_speedup"] = 1.0
    eager = r[r.variant == "eager"][["model", "batch", "mode", "ref_ms"]].rename(columns={"ref_ms": "ref_eager_ms"})
    r = r.merge(eager, on=["model", "batch", "mode"])
    r["ref_speedup"] = r["ref_eager_ms"] / r["ref_ms"]
    t = sp.merge(r, on=["model", "variant", "batch", "mode"], how="inner")
    t["wall_vs_ref"] = t["wall_time_per_iter_ms"] / t["ref_ms"]
    t["traced_vs_ref"] = t["traced_wall_ms"] / t["ref_ms"]
    t["speedup_vs_ref"] = t["speedup_wall"] / t["ref_speedup"]
    # the speedups timed within one process, the pipeline's against the reference's
    t["paired_vs_ref"] = (t["speedup_paired"] / t["ref_paired_speedup"]) if "speedup_paired" in t else float("nan")
    # how much slower the pipeline's host was than the reference's, by the host probe
    t["host_vs_ref"] = t["host_probe_ms"] / t["ref_host_probe_ms"] if "host_probe_ms" in t else float("nan")
    eager_traced = t[t.variant == "eager"][["model", "batch", "mode", "traced_wall_ms"]].rename(
        columns={"traced_wall_ms": "eager_traced_ms"})
    t = t.merge(eager_traced, on=["model", "batch", "mode"], how="left")
    t["traced_speedup_vs_ref"] = (t["eager_traced_ms"] / t["traced_wall_ms"]) / t["ref_speedup"]
    cols = ["model", "mode", "batch", "variant", "repeats_ok", "ref_processes", "wall_time_per_iter_ms", "ref_ms",
            "wall_vs_ref", "cv_wall", "ref_cv", "speedup_wall", "ref_speedup", "speedup_vs_ref",
            "traced_vs_ref", "traced_speedup_vs_ref", "profiler_overhead", "injection_overhead", "host_vs_ref",
            "ref_paired_speedup", "paired_vs_ref"]
    for c in cols:
        if c not in t:
            t[c] = float("nan")   # tables from before a column existed
    t = t[cols].sort_values(["model", "mode", "batch", "variant"], ignore_index=True)
    t.to_csv(os.path.join(a.results, "untraced_timing.csv"), index=False)
    pd.set_option("display.width", 300)
    print(t.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    within = lambda s: int((s.sub(1).abs() <= 0.05).sum())  # noqa: E731
    n = len(t)
    print(f"\nwall time within 5% of the untraced reference: {within(t.wall_vs_ref)} of {n} "
          f"(traced wall time, as reported before: {within(t.traced_vs_ref)} of {n})")
    v = t[t.variant != "eager"]   # eager's speedup over itself is 1 on both sides
    print(f"speedup within 5% of the untraced speedup: {within(v.speedup_vs_ref)} of {len(v)} variants "
          f"(traced speedup: {within(v.traced_speedup_vs_ref)} of {len(v)})")
    print(f"paired speedup (within each process) within 5% of the reference's paired speedup: "
          f"{within(v.paired_vs_ref.dropna())} of {int(v.paired_vs_ref.notna().sum())} variants")
    print(f"profiler_overhead: median {t.profiler_overhead.median():.3f}, range {t.profiler_overhead.min():.3f}-"
          f"{t.profiler_overhead.max():.3f}; injection_overhead: median {t.injection_overhead.median():.3f}, "
          f"range {t.injection_overhead.min():.3f}-{t.injection_overhead.max():.3f}")
    off = t[t.wall_vs_ref.sub(1).abs() > 0.05]
    print(f"of the {len(off)} wall times off by over 5%, {int((off.host_vs_ref.sub(1).abs() > 0.05).sum())} had "
          f"the host probe off by over 5% too, in the same direction for "
          f"{int(((off.wall_vs_ref > 1) == (off.host_vs_ref > 1)).sum())} (host_vs_ref: the pipeline's host "
          f"probe / the reference's)")
    print(f"CV over processes: pipeline median {t.cv_wall.median():.3f} (max {t.cv_wall.max():.3f}), "
          f"reference median {t.ref_cv.median():.3f} (max {t.ref_cv.max():.3f})")
    return 0


def windows_table(results: str) -> pd.DataFrame:
    """Every timing window (the variant's and eager's, in their order) and host probe of the
    pipeline's untraced processes under `results`: one row each."""
    import glob
    import json

    import pandas as pd
    rows = []
    for f in sorted(glob.glob(os.path.join(results, "*", "runs", "**", "timing.json"), recursive=True)):
        with open(f) as fh:
            t = json.load(fh)
        tm = t.get("timing") or {}
        key = {k: t.get(k) for k in ("model", "variant", "batch", "mode", "repeat")}
        for timed, field in (("variant", "windows_ms"), ("eager", "eager_windows_ms"), ("host_probe", "host_probe_ms")):
            rows += [{**key, "timed": timed, "window": i, "ms": x} for i, x in enumerate(tm.get(field) or [])]
    return pd.DataFrame(rows, columns=["model", "variant", "batch", "mode", "repeat", "timed", "window", "ms"])


def paired_estimators(windows: pd.DataFrame) -> pd.DataFrame:
    """Two estimators of each process's paired speedup from its windows (windows_table):
    eager's median window / the variant's (ratio_of_medians: the pipeline's), and the median
    of the ratios of windows timed back to back (median_of_pair_ratios); per configuration,
    their medians and CVs over the processes."""
    import pandas as pd
    w = windows[windows["timed"] != "host_probe"].pivot_table(
        index=["model", "variant", "batch", "mode", "repeat", "window"], columns="timed", values="ms").dropna()
    per = w.groupby(level=[0, 1, 2, 3, 4]).apply(lambda g: pd.Series({
        "ratio_of_medians": g["eager"].median() / g["variant"].median(),
        "median_of_pair_ratios": (g["eager"] / g["variant"]).median()}))
    cv = lambda x: x.std() / x.mean()  # noqa: E731
    return per.groupby(level=[0, 1, 2, 3]).agg(
        processes=("ratio_of_medians", "size"),
        ratio_of_medians=("ratio_of_medians", "median"), ratio_of_medians_cv=("ratio_of_medians", cv),
        median_of_pair_ratios=("median_of_pair_ratios", "median"),
        median_of_pair_ratios_cv=("median_of_pair_ratios", cv)).reset_index()


def cmd_windows(a) -> int:
    w = windows_table(a.results)
    w.to_csv(os.path.join(a.results, "windows.csv"), index=False)
    print(paired_estimators(w).to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    return 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "_loop":
        m, v, b, mode, w, n = argv[1:7]
        print(*reference_loop(m, v, int(b), mode, int(w), int(n)))
        return 0
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("step", choices=["sweep", "reference", "report", "windows"])
    p.add_argument("--results", default="results/bench10")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--windows", type=int, default=5)
    p.add_argument("--iters", type=int, default=WARMUP * 0 + ITERS * 5,
                   help="reference: timed iterations per process (default: the pipeline's windows x iters)")
    p.add_argument("--cores", type=int, default=os.cpu_count() or 1)
    p.add_argument("--budget-s", type=float, default=1e9, help="reference: stop starting processes after this")
    a = p.parse_args(argv)
    return {"sweep": cmd_sweep, "reference": cmd_reference, "report": cmd_report, "windows": cmd_windows}[a.step](a)


if __name__ == "__main__":
    sys.exit(main())
