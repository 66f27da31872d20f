"""Where a profiled run's time goes, from the records a sweep already leaves behind.

    python benchmarks/run_overhead.py RESULTS [--csv OUT.csv]

For every profiled run under RESULTS/runs: the seconds each rule held its job (Snakemake's
benchmark files: time_untraced, profile_nsys, nsys_export_sqlite, nsys_stats, run_metrics)
and, inside the two runner processes, the seconds of each phase (run.json / timing.json
phases_s: startup, imports, cuda_init, build, check, warmup, timing, measure, finish).
nsys's own start and finish is the profile_nsys job's time less the runner process's
lifetime. Prints one row per run and the medians; the GPU-held time of a run is
time_untraced + profile_nsys (export, stats and metrics run on other cores beside the
next run).
"""
from __future__ import annotations

import argparse
import csv
import glob
import json
import os
import statistics
import sys

PHASES = ("startup", "imports", "cuda_init", "gpu_wait", "build", "check", "warmup", "timing", "measure", "finish")
RULES = ("time_untraced", "profile_nsys", "nsys_export_sqlite", "nsys_stats", "run_metrics")


def _json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _bench_s(run_dir: str, rule: str) -> float | None:
    try:
        with open(os.path.join(run_dir, "benchmarks", f"{rule}.tsv")) as f:
            row = next(csv.DictReader(f, delimiter="\t"))
        return float(row["s"])
    except (OSError, StopIteration, KeyError, ValueError):
        return None


def _life(rec) -> float | None:
    if rec and rec.get("process_start_unix") and rec.get("process_end_unix"):
        return rec["process_end_unix"] - rec["process_start_unix"]
    return None


def breakdown(results: str) -> list[dict]:
    rows = []
    for rj in sorted(glob.glob(os.path.join(results, "runs", "nsys", "**", "run.json"), recursive=True)):
        d = os.path.dirname(rj)
        run, timing = _json(rj), _json(os.path.join(d, "timing.json"))
        if not run:
            continue
        row = {"run": os.path.relpath(d, os.path.join(results, "runs")), "status": run.get("status"),
               "gpu_index": run.get("gpu_index"), "start_unix": run.get("process_start_unix"),
               "end_unix": run.get("process_end_unix")}
        for r in RULES:
            row[f"{r}_s"] = _bench_s(d, r)
        for who, rec in (("untraced", timing), ("nsys", run)):
            ph = (rec or {}).get("phases_s") or {}
            for p in PHASES:
                row[f"{who}_{p}_s"] = ph.get(p)
            row[f"{who}_process_s"] = _life(rec)
            held = ((rec or {}).get("gpu_slot") or {}).get("held_unix")
            row[f"{who}_gpu_uuid"] = (rec or {}).get("gpu_uuid")
            row[f"{who}_held_from"], row[f"{who}_held_to"] = held or (None, None)
            row[f"{who}_lock_held_s"] = (held[1] - held[0]) if held else None
        if row["profile_nsys_s"] is not None and row["nsys_process_s"] is not None:
            row["nsys_own_s"] = row["profile_nsys_s"] - row["nsys_process_s"]
        held = [row[f"{r}_s"] for r in ("time_untraced", "profile_nsys")]
        row["jobs_s"] = sum(held) if all(h is not None for h in held) else None
        rows.append(row)
    return rows


def overlaps(rows: list[dict]) -> list[tuple]:
    """Pairs of processes that held one GPU (same UUID) at overlapping times: none, when
    the slots work."""
    spans = sorted((r[f"{w}_gpu_uuid"], r[f"{w}_held_from"], r[f"{w}_held_to"], f"{r['run']} ({w})")
                   for r in rows for w in ("untraced", "nsys") if r.get(f"{w}_held_from"))
    bad = []
    for a, b in zip(spans, spans[1:]):
        if a[0] == b[0] and b[1] < a[2]:
            bad.append((a[3], b[3], a[2] - b[1]))
    return bad


def _median(rows, key):
    xs = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(xs) if xs else None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("results")
    p.add_argument("--csv")
    a = p.parse_args(argv)
    rows = breakdown(a.results)
    if not rows:
        print(f"no profiled nsys runs under {a.results}/runs", file=sys.stderr)
        return 1
    keys = [k for k in rows[0] if k.endswith("_s")]
    print(f"{len(rows)} profiled runs under {a.results}; medians in seconds:")
    for k in keys:
        m = _median(rows, k)
        if m is not None:
            print(f"  {k:28s} {m:8.2f}")
    ok = [r for r in rows if r["jobs_s"] is not None]
    if ok:
        print(f"Job time per run (time_untraced + profile_nsys jobs): median {_median(ok, 'jobs_s'):.1f} s, "
              f"min {min(r['jobs_s'] for r in ok):.1f}, max {max(r['jobs_s'] for r in ok):.1f}")
    spans = [r for r in rows if r.get("untraced_held_from") or r.get("nsys_held_from")]
    if spans:
        bad = overlaps(rows)
        gpus = sorted({r[f"{w}_gpu_uuid"] for r in spans for w in ("untraced", "nsys") if r.get(f"{w}_gpu_uuid")})
        print(f"overlap check: {2 * len(spans)} measuring processes on {len(gpus)} GPU(s): "
              + ("no two held one GPU at once" if not bad else f"{len(bad)} OVERLAPS: {bad[:5]}"))
        t0 = min(r["start_unix"] for r in rows if r.get("start_unix"))
        t1 = max(r["end_unix"] for r in rows if r.get("end_unix"))
        held = sum(r.get("untraced_lock_held_s") or 0 for r in rows) + sum(r.get("nsys_lock_held_s") or 0 for r in rows)
        print(f"GPU lock held {held:.0f} s in all, over {t1 - t0:.0f} s from the first process's start to the last's end "
              f"({held / max(len(gpus), 1) / (t1 - t0):.0%} of the GPUs' time); median per run "
              f"{_median([{'x': (r.get('untraced_lock_held_s') or 0) + (r.get('nsys_lock_held_s') or 0)} for r in rows], 'x'):.1f} s")
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
