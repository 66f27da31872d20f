"""Where a profiled run's time goes, from the records a sweep already leaves behind.

    python benchmarks/run_overhead.py RESULTS [--csv OUT.csv] [--in-flight 4,6,8]

For every profiled run under RESULTS/runs: the seconds each rule held its job (Snakemake's
benchmark files: time_untraced, profile_nsys, nsys_export_sqlite, nsys_stats, run_metrics)
and, inside the two runner processes, the seconds of each phase (run.json / timing.json
phases_s: startup, imports, cuda_init, build, check, warmup, timing, measure, finish).
nsys's own start and finish is the profile_nsys job's time less the runner process's
lifetime. Prints one row per run and the medians; the GPU-held time of a run is
time_untraced + profile_nsys (export, stats and metrics run on other cores beside the
next run).

With --in-flight: the sweep's time replayed on one GPU with up to K measuring processes in
flight (simulate_sweep), from each process's measured time before, in and after the GPU
lock; a sweep run on several GPUs is replayed as if on one. A model, not a measurement: it
leaves out contention between the processes. Compare its time for the K a one-GPU sweep
ran with against the measured span it prints.

Isolation checks, from the same records: the slowest / median timing window with and
without another process starting up beside (startup_beside_timing), and the host probe's
speed by how many of the sweep's processes were alive (probe_by_company: does the sweep's
own load slow the host's CPU?).
"""
from __future__ import annotations

import argparse
import csv
import glob
import heapq
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


def _held(rec) -> list | None:
    """The process's [start, end] of its GPU's lock, or None (no lock, or still held)."""
    held = ((rec or {}).get("gpu_slot") or {}).get("held_unix")
    return held if held and len(held) == 2 and None not in held else None


def breakdown(results: str) -> list[dict]:
    rows = []
    for rj in sorted(glob.glob(os.path.join(results, "runs", "nsys", "**", "run.json"), recursive=True)):
        d = os.path.dirname(rj)
        run, timing = _json(rj), _json(os.path.join(d, "timing.json"))
        if not run:
            continue
        # a run not started under nsys (its untraced process failed) has its untraced
        # record as run.json: one process, not two
        traced = None if run.get("profile_skipped") else run
        row = {"run": os.path.relpath(d, os.path.join(results, "runs")), "status": run.get("status"),
               "start_unix": run.get("process_start_unix"), "end_unix": run.get("process_end_unix")}
        for r in RULES:
            row[f"{r}_s"] = _bench_s(d, r)
        for who, rec in (("untraced", timing), ("nsys", traced)):
            ph = (rec or {}).get("phases_s") or {}
            for p in PHASES:
                row[f"{who}_{p}_s"] = ph.get(p)
            row[f"{who}_process_s"] = _life(rec)
            held = _held(rec)
            # each process claims its own GPU: a run's two may be on different ones
            row[f"{who}_gpu_index"] = (rec or {}).get("gpu_index")
            row[f"{who}_gpu_uuid"] = (rec or {}).get("gpu_uuid")
            row[f"{who}_held_from"], row[f"{who}_held_to"] = held or (None, None)
            row[f"{who}_lock_held_s"] = (held[1] - held[0]) if held else None
            slot = (rec or {}).get("gpu_slot") or {}   # its two waits (jobs.slots): claim, then lock
            row[f"{who}_claim_wait_s"], row[f"{who}_lock_wait_s"] = slot.get("claim_wait_s"), slot.get("wait_s")
        if row["profile_nsys_s"] is not None and row["nsys_process_s"] is not None:
            row["nsys_own_s"] = row["profile_nsys_s"] - row["nsys_process_s"]
        held = [row[f"{r}_s"] for r in ("time_untraced", "profile_nsys")]
        row["jobs_s"] = sum(held) if all(h is not None for h in held) else None
        row["_untraced_rec"], row["_nsys_rec"] = timing, traced
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


def lock_by_gpu(rows: list[dict]) -> dict:
    """Per GPU (UUID): the number of measuring processes that held its lock and the
    seconds they held it, summed."""
    out = {}
    for r in rows:
        for w in ("untraced", "nsys"):
            if r.get(f"{w}_lock_held_s") is not None:
                n, s = out.get(r[f"{w}_gpu_uuid"], (0, 0.0))
                out[r[f"{w}_gpu_uuid"]] = (n + 1, s + r[f"{w}_lock_held_s"])
    return out


def lock_spans(rows: list[dict]) -> list[dict]:
    """One row per measuring process: when it started, asked for, took and let go of its
    GPU's lock, and ended (unix seconds), plus its job's time outside the process
    (Snakemake's start, nsys's own start and flush); when its imports and its wait for a
    GPU to claim ended (its start-up: CUDA's context and the variant's prepare, runs from
    there to the request), when its timing phase ran (lock taken + build + check + warm-up,
    to + timing) and its timing windows (ms). Processes without a lock record (a run
    started without slots, one killed before the lock) are left out."""
    out = []
    for r in rows:
        for who, rule in (("untraced", "time_untraced"), ("nsys", "profile_nsys")):
            rec = r.get(f"_{who}_rec") or {}
            held, start, end = _held(rec), rec.get("process_start_unix"), rec.get("process_end_unix")
            if not held or start is None or end is None:
                continue
            job = r.get(f"{rule}_s")
            ph = rec.get("phases_s") or {}
            timing_from = held[0] + sum(ph.get(k, 0) for k in ("build", "check", "warmup"))
            out.append({"run": r["run"], "who": who, "gpu": rec.get("gpu_uuid"), "start": start,
                        "imported": start + ph.get("startup", 0) + ph.get("imports", 0)
                        + ((rec.get("gpu_slot") or {}).get("claim_wait_s") or 0.0),
                        "request": held[0] - ((rec.get("gpu_slot") or {}).get("wait_s") or 0.0),
                        "held_from": held[0], "held_to": held[1], "end": end,
                        "outside_s": max(0.0, job - (end - start)) if job is not None else 0.0,
                        "timing": (timing_from, timing_from + ph.get("timing", 0)),
                        "windows_ms": [x for x in ((rec.get("timing") or {}).get("windows_ms") or []) if x],
                        "probe_ms": (rec.get("timing") or {}).get("host_probe_median_ms"),
                        "host": (rec.get("versions") or {}).get("host")})
    return out


def mean_in_flight(spans: list[dict], step: float = 1.0) -> float:
    """Measuring processes alive at once per GPU, averaged over the time any was alive
    (sampled every `step` seconds)."""
    if not spans:
        return 0.0
    gpus = max(len({s["gpu"] for s in spans}), 1)
    t0, t1 = min(s["start"] for s in spans), max(s["end"] for s in spans)
    ts = [t0 + i * step for i in range(int((t1 - t0) / step) + 1)]
    alive = [sum(1 for s in spans if s["start"] <= t < s["end"]) for t in ts]
    busy = [a for a in alive if a]
    return sum(busy) / len(busy) / gpus if busy else 0.0


def simulate_sweep(spans: list[dict], in_flight: int) -> float:
    """Seconds a one-GPU sweep of these processes takes with up to `in_flight` of them
    alive at once: each keeps its measured time before the lock (start to request), in it
    and after it (to its job's end); the lock goes to the first to ask; a run's nsys
    process starts after its untraced one and ahead of the next untraced ones (the
    workflow's priority); untraced processes start in the order they did."""
    by_run = {}
    for s in spans:
        by_run.setdefault(s["run"], {})[s["who"]] = s
    order = sorted(by_run, key=lambda r: min(p["start"] for p in by_run[r].values()))
    todo = [(r, "untraced" if "untraced" in by_run[r] else "nsys") for r in order]
    ready, events, waiting = [], [], []
    alive, lock_busy, now, seq = 0, False, 0.0, 0

    def push(t, kind, job):
        nonlocal seq
        seq += 1
        heapq.heappush(events, (t, seq, kind, job))

    def fill():
        nonlocal alive
        while alive < in_flight and (ready or todo):
            job = ready.pop(0) if ready else todo.pop(0)
            p = by_run[job[0]][job[1]]
            alive += 1
            push(now + p["request"] - p["start"], "request", job)

    def hold(job):
        p = by_run[job[0]][job[1]]
        push(now + p["held_to"] - p["held_from"], "release", job)

    fill()
    while events:
        now, _, kind, job = heapq.heappop(events)
        p = by_run[job[0]][job[1]]
        if kind == "request":
            if lock_busy:
                waiting.append(job)
            else:
                lock_busy = True
                hold(job)
        elif kind == "release":
            push(now + p["end"] - p["held_to"] + p["outside_s"], "end", job)
            if waiting:
                hold(waiting.pop(0))
            else:
                lock_busy = False
        else:
            alive -= 1
            if job[1] == "untraced" and "nsys" in by_run[job[0]]:
                ready.append((job[0], "nsys"))
            fill()
    return now


def startup_beside_timing(rows: list[dict]) -> dict:
    """Does a process starting up (CUDA's context, the variant's prepare: from the end of
    its imports to its lock request) disturb the one timing on its GPU (same UUID)? For each
    untraced process with 3 or more timing windows: whether another process's start-up
    overlapped its timing phase (lock_spans), and its slowest window / its median window.
    Returns {"beside": [...], "alone": [...]} of those ratios."""
    spans = lock_spans(rows)
    out = {"beside": [], "alone": []}
    for p in spans:
        w = p["windows_ms"]
        if p["who"] != "untraced" or len(w) < 3:
            continue
        t0, t1 = p["timing"]
        beside = any(q is not p and q["gpu"] == p["gpu"] and q["imported"] < t1 and q["request"] > t0
                     for q in spans)
        out["beside" if beside else "alone"].append(max(w) / statistics.median(w))
    return out


def probe_by_company(rows: list[dict]) -> dict[int, list[float]]:
    """Does the sweep's own load slow its host? For each untraced process with a host probe
    (jobs.host_probe): how many other measuring processes of the sweep were alive on
    its host (any GPU: they share the CPU) during its timing phase. Returns {that number:
    [its probe medians, ms]}."""
    spans = lock_spans(rows)
    out: dict[int, list[float]] = {}
    for p in spans:
        if p["who"] != "untraced" or not p.get("probe_ms"):
            continue
        t0, t1 = p["timing"]
        n = sum(1 for q in spans if q is not p and q.get("host") == p.get("host") and q["start"] < t1 and q["end"] > t0)
        out.setdefault(n, []).append(p["probe_ms"])
    return dict(sorted(out.items()))


def phase_shares(rows: list[dict], who: str = "untraced") -> dict:
    """{phase: (seconds summed, share of the summed phases)} of `who`'s processes (untraced
    or nsys) that ran their check (a process stopped before it has none), and "processes":
    how many. A sweep whose processes mostly wait for their GPU slot is held up by what runs
    under the slot (on real networks: the compile in the check phase)."""
    done = [r for r in rows if r.get(f"{who}_check_s") is not None]
    totals = {p: sum(r.get(f"{who}_{p}_s") or 0.0 for r in done) for p in PHASES}
    whole = sum(totals.values())
    return {"processes": len(done), **{p: (t, t / whole if whole else None) for p, t in totals.items()}}


def gpu_waits(rows: list[dict], who: str = "untraced") -> dict:
    """The two waits in gpu_wait, summed over `who`'s processes that recorded them: for a GPU
    free to claim ("claim") and for the claimed GPU's lock ("lock"), with how many."""
    claims = [r[f"{who}_claim_wait_s"] for r in rows if r.get(f"{who}_claim_wait_s") is not None]
    locks = [r[f"{who}_lock_wait_s"] for r in rows if r.get(f"{who}_lock_wait_s") is not None]
    return {"claim": (sum(claims), len(claims)), "lock": (sum(locks), len(locks))}


def _median(rows, key):
    xs = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(xs) if xs else None


def _counts(text: str) -> list[int]:
    try:
        ks = [int(x) for x in text.split(",")]
    except ValueError:
        ks = []
    if not ks or min(ks) < 1:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers >= 1, got {text!r}")
    return ks


def gate_pauses(rows: list[dict]) -> dict:
    """What the host gate (jobs.host_gate) cost the sweep: the spans its measuring
    processes held the sweep paused (untraced windows: host_check.gate; traced measured
    ranges: traced_gate), merged where they overlap, the processes stopped at most, and the
    windows' retimes (host_check.pairs_discarded)."""
    spans, stopped, retimed, pauses = [], 0, 0, 0
    for r in rows:
        for rec in (r.get("_untraced_rec"), r.get("_nsys_rec")):
            if not rec:
                continue
            check = rec.get("host_check") or {}
            retimed += check.get("pairs_discarded") or 0
            for g in (check.get("gate"), rec.get("traced_gate")):
                if g and g.get("roots") and g.get("held_unix"):
                    spans.append(tuple(g["held_unix"]))
                    stopped = max(stopped, g.get("stopped") or 0)
                    pauses += 1
    merged = []
    for a, b in sorted(spans):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return {"pauses": pauses, "paused_s": sum(b - a for a, b in merged), "stopped_max": stopped,
            "pairs_retimed": retimed}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("results")
    p.add_argument("--csv")
    p.add_argument("--in-flight", type=_counts, help="comma-separated K >= 1: the sweep replayed with K "
                   "processes in flight per GPU")
    a = p.parse_args(argv)
    rows = breakdown(a.results)
    if not rows:
        print(f"no profiled nsys runs under {a.results}/runs", file=sys.stderr)
        return 1
    keys = [k for k in rows[0] if k.endswith("_s") and not k.startswith("_")]
    print(f"{len(rows)} profiled runs under {a.results}; medians in seconds:")
    for k in keys:
        m = _median(rows, k)
        if m is not None:
            print(f"  {k:28s} {m:8.2f}")
    shares = phase_shares(rows)
    if shares["processes"]:
        print(f"untraced processes' phases summed ({shares['processes']} that ran their check): " + ", ".join(
            f"{p} {t:.0f} s ({f:.0%})" for p, (t, f) in sorted(
                ((p, v) for p, v in shares.items() if p != "processes"), key=lambda x: -x[1][0]) if t >= 0.5))
    waits = gpu_waits(rows)
    if waits["lock"][1]:
        print(f"untraced processes' waits for the GPU: for a GPU free to claim {waits['claim'][0]:.0f} s "
              f"({waits['claim'][1]} processes that record it), for its lock {waits['lock'][0]:.0f} s "
              f"({waits['lock'][1]})")
    ok = [r for r in rows if r["jobs_s"] is not None]
    if ok:
        print(f"Job time per run (time_untraced + profile_nsys jobs): median {_median(ok, 'jobs_s'):.1f} s, "
              f"min {min(r['jobs_s'] for r in ok):.1f}, max {max(r['jobs_s'] for r in ok):.1f}")
    spans = [r for r in rows if r.get("untraced_held_from") or r.get("nsys_held_from")]
    if spans:
        bad = overlaps(rows)
        gpus = sorted({r[f"{w}_gpu_uuid"] for r in spans for w in ("untraced", "nsys") if r.get(f"{w}_gpu_uuid")})
        n = sum(1 for r in spans for w in ("untraced", "nsys") if r.get(f"{w}_held_from"))
        print(f"overlap check: {n} measuring processes on {len(gpus)} GPU(s): "
              + ("no two held one GPU at once" if not bad else f"{len(bad)} OVERLAPS: {bad[:5]}"))
        t0 = min(r["start_unix"] for r in rows if r.get("start_unix") is not None)
        t1 = max(r["end_unix"] for r in rows if r.get("end_unix") is not None)
        held = sum(r.get("untraced_lock_held_s") or 0 for r in rows) + sum(r.get("nsys_lock_held_s") or 0 for r in rows)
        print(f"GPU lock held {held:.0f} s in all, over {t1 - t0:.0f} s from the first process's start to the last's end "
              f"({held / max(len(gpus), 1) / (t1 - t0):.0%} of the GPUs' time); median per run "
              f"{_median([{'x': (r.get('untraced_lock_held_s') or 0) + (r.get('nsys_lock_held_s') or 0)} for r in rows], 'x'):.1f} s")
        for uuid, (k, s) in sorted(lock_by_gpu(rows).items()):
            print(f"  GPU {uuid}: {k} measuring processes, lock held {s:.0f} s ({s / (t1 - t0):.0%})")
    gate = gate_pauses(rows)
    if gate["pauses"]:
        t0 = min(r["start_unix"] for r in rows if r.get("start_unix") is not None)
        t1 = max(r["end_unix"] for r in rows if r.get("end_unix") is not None)
        print(f"host gate: {gate['pauses']} measurements paused the sweep for {gate['paused_s']:.0f} s in all "
              f"({gate['paused_s'] / max(t1 - t0, 1e-9):.0%} of the {t1 - t0:.0f} s from the first process's start to "
              f"the last's end), stopping up to {gate['stopped_max']} processes; {gate['pairs_retimed']} pairs of "
              "windows timed again for a disturbed host")
    procs = lock_spans(rows)
    if procs:
        print(f"measuring processes in flight per GPU: {mean_in_flight(procs):.2f} on average")
    split = startup_beside_timing(rows)
    if split["beside"] and split["alone"]:
        def share(xs):
            return sum(x > 1.2 for x in xs) / len(xs)
        print("another process starting up (CUDA context, prepare) during a process's timing: slowest / median "
              f"window {statistics.median(split['beside']):.3f} in {len(split['beside'])} processes "
              f"({share(split['beside']):.0%} over 1.2), {statistics.median(split['alone']):.3f} in the "
              f"{len(split['alone'])} without ({share(split['alone']):.0%} over 1.2)")
    company = probe_by_company(rows)
    if company:
        print("host probe (ms per pass) of each untraced process's timing, by the sweep's other processes alive "
              "then: " + "; ".join(f"{n} alive: median {statistics.median(v):.3f} ({len(v)})" for n, v in company.items()))
    if a.in_flight and procs:
        span = max(p["end"] for p in procs) - min(p["start"] for p in procs)
        gpus = len({p["gpu"] for p in procs})
        print(f"replayed on one GPU with K in flight (a model; the processes' first start to last end was "
              f"{span:.0f} s" + (f" on {gpus} GPUs, each process's times as measured there" if gpus > 1 else "")
              + "):")
        for k in a.in_flight:
            print(f"  K={k}: {simulate_sweep(procs, k):.0f} s")
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=[k for k in rows[0] if not k.startswith("_")], extrasaction="ignore")
            w.writeheader()
            w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
