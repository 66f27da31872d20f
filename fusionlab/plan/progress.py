"""How far a sweep is, and about how long is left.

The Snakefile's onstart writes RESULTS/logs/sweep_plan.json (the run folders to finish
and the start time); a run is finished when its metrics.json exists. The estimate is the
time per finished run so far times the runs left (runs finish in parallel on several
GPUs, so this is the sweep's rate, not one run's time).

    fusionlab progress RESULTS      # any time, from another shell

A sweep whose process was killed (its lock file, plan.sweep_lock, names a pid of
this host that has ended) is reported as not running, with no estimate, and with its jobs
that still run (core.owner), which must end before it is resumed; so is one that let go of
its lock (let_go) before its runs were done (stopped by SIGTERM or Ctrl-C). A RESULTS
that is not a folder is an error (exit 1); a plan that cannot be read, or holds what
write_plan never writes, is one line naming it (exit 2).
"""
from __future__ import annotations

import math
import os
import time

from fusionlab.core import sizes
from fusionlab.core.io import load_json, load_json_object, write_json_atomic
from fusionlab.experiments import catalog
from fusionlab.plan import sweep, sweep_lock

PLAN = os.path.join("logs", "sweep_plan.json")


def write_plan(results: str, run_dirs: list[str], gpus: int, config: dict | None = None,
               given: dict | None = None, config_files=()) -> str:
    """The sweep's record: its runs, and its config as it was resolved (config), with the
    config files read and the keys taken from the schema's defaults (those not in given)."""
    path = os.path.join(results, PLAN)
    rec = {"start_unix": time.time(), "gpus": gpus, "runs": sorted(run_dirs),
           "done_at_start": sum(_done(d) for d in run_dirs)}
    if config is not None:
        rec.update(config=config, config_files=[os.path.abspath(f) for f in config_files],
                   defaults_from_schema=sorted(set(config) - set(given or {})))
    write_json_atomic(path, rec)
    return path


def _done(run_dir: str) -> bool:
    return os.path.exists(os.path.join(run_dir, "metrics.json"))


def _clock(s: float) -> str:
    s = int(round(s))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def read_plan(results: str) -> dict | None:
    """RESULTS/logs/sweep_plan.json, or None where there is none; PlanError naming the file
    where it cannot be read or is not the plan write_plan writes (runs: a list of folders,
    start_unix: a finite time, done_at_start: a count)."""
    path = os.path.join(results, PLAN)
    if not os.path.lexists(path):
        return None
    plan = load_json_object(path, PlanError, "a sweep plan (a JSON object)")
    runs, start, done = plan.get("runs"), plan.get("start_unix"), plan.get("done_at_start", 0)
    if not isinstance(runs, list) or not all(isinstance(r, str) for r in runs):
        raise PlanError(f"{path}: runs is {repr(runs)[:60]}, not a list of run folders")
    if isinstance(start, bool) or not isinstance(start, (int, float)) or not math.isfinite(start):
        raise PlanError(f"{path}: start_unix is {repr(start)[:60]}, not a finite time")
    if isinstance(done, bool) or not isinstance(done, int) or not 0 <= done <= len(runs):
        raise PlanError(f"{path}: done_at_start is {repr(done)[:60]}, not a count of 0..{len(runs)} runs")
    return plan


class PlanError(ValueError):
    """A sweep plan that cannot be read or holds what write_plan never writes (one line)."""


def status(results: str, now: float | None = None) -> dict | None:
    """done, total, elapsed_s, left_s (None until a run of this session has finished)."""
    plan = read_plan(results)
    if plan is None:
        return None
    now = time.time() if now is None else now
    done = sum(_done(d) for d in plan["runs"])
    total = len(plan["runs"])
    new = done - plan.get("done_at_start", 0)
    elapsed = now - plan["start_unix"]
    left = elapsed / new * (total - done) if new > 0 else None
    return {"done": done, "total": total, "elapsed_s": elapsed, "left_s": left}


def line(results: str, now: float | None = None) -> str:
    """One line: runs done of the plan's, and time elapsed and left; for a sweep that was
    killed (sweep_lock.stopped), that it is not running and how to resume it."""
    s = status(results, now)
    if s is None:
        return f"fusionlab progress: no sweep plan under {results} (the sweep has not started)"
    pct = 100 * s["done"] / s["total"] if s["total"] else 100
    dead = sweep_lock.stopped(results)
    found = sweep_lock.orphans(results) if dead is not None else []
    if found:
        pids = " ".join(str(o.get("pid")) for o in found)
        return (f"fusionlab progress: {s['done']}/{s['total']} runs ({pct:.0f}%); the sweep is not running "
                f"(its process, pid {dead['pid']} on {dead['host']}, has ended) but {len(found)} of its "
                f"jobs still run (pids {pids}): wait for them to end or stop them, then run the same "
                f"command again to resume it")
    if dead is not None:
        return (f"fusionlab progress: {s['done']}/{s['total']} runs ({pct:.0f}%); the sweep is not running "
                f"(its process, pid {dead['pid']} on {dead['host']}, has ended): run the same command "
                f"again to resume it")
    if s["done"] < s["total"] and let_go(results):
        return (f"fusionlab progress: {s['done']}/{s['total']} runs ({pct:.0f}%); the sweep is not running "
                f"(it let go of its lock: it ended or was stopped before its runs were done): run the same "
                f"command again to resume it")
    left = f"about {_clock(s['left_s'])} left" if s["left_s"] is not None else "time left: after the first run"
    return (f"fusionlab progress: {s['done']}/{s['total']} runs ({pct:.0f}%), "
            f"{_clock(s['elapsed_s'])} elapsed, {left}")


def let_go(results: str) -> bool:
    """The sweep let go of its lock (plan.sweep_lock.release empties the lock file) and no
    process holds it: it ended, or was stopped by a signal it could answer."""
    path = sweep_lock.lock_path(results)
    return os.path.isfile(path) and os.path.getsize(path) == 0 and sweep_lock.holder(results) is None


def main(argv=None) -> int:
    """`fusionlab progress [RESULTS]` (default: results): print line(RESULTS); exit 1 with
    one line on stderr when RESULTS is not a folder."""
    import sys
    from fusionlab.core.args import OneLineParser
    p = OneLineParser(prog="fusionlab progress", description="how far a sweep is, and about how long is left")
    p.add_argument("results", nargs="?", default="results", help="the sweep's results folder (default: results)")
    results = p.parse_args(sys.argv[1:] if argv is None else list(argv)).results
    if not os.path.isdir(results):
        print(f"fusionlab progress: no results folder {results}", file=sys.stderr)
        return 1
    try:
        print(line(results))
    except PlanError as e:
        print(f"fusionlab progress: {e}", file=sys.stderr)
        return 2
    return 0


CONFIGURATION = ("model", "variant", "mode", "dtype", "batch", "size")   # a run less its repeat


def not_recorded(cfg: dict, backend: str, recorded: list[dict], device: str | None = None) -> list[dict]:
    """The configurations cfg asks for (sweep.runs, less the repeat) of which no run is
    among `recorded` (sweep.existing_runs): a sweep stopped before them, or never run;
    in sweep.runs's order. With device, each also names the backend, the device and its
    size axes' values (`sizes`: the model's defaults, and those its size label sets), as
    a recorded run of it would."""
    have = {tuple(r[k] for k in CONFIGURATION) for r in recorded}
    out = []
    for r in sweep.runs(cfg, backend):
        key = tuple(r[k] for k in CONFIGURATION)
        if key not in have:
            have.add(key)
            c = dict(zip(CONFIGURATION, key))
            if device:
                values = {a: d["default"] for a, d in catalog.sizes(r["model"]).items()}
                c.update(backend=backend, device=device, sizes={**values, **sizes.parse(r["size"])})
            out.append(c)
    return out
