"""How far a sweep is, and about how long is left.

The Snakefile's onstart writes RESULTS/logs/sweep_plan.json (the run folders to finish
and the start time); a run is finished when its metrics.json exists. The estimate is the
time per finished run so far times the runs left (runs finish in parallel on several
GPUs, so this is the sweep's rate, not one run's time).

    fusionlab progress RESULTS      # any time, from another shell
"""
from __future__ import annotations

import os
import time

from fusionlab.core.io import read_json, write_json_atomic

PLAN = os.path.join("logs", "sweep_plan.json")


def write_plan(results: str, run_dirs: list[str], gpus: int) -> str:
    path = os.path.join(results, PLAN)
    write_json_atomic(path, {"start_unix": time.time(), "gpus": gpus, "runs": sorted(run_dirs),
                             "done_at_start": sum(_done(d) for d in run_dirs)})
    return path


def _done(run_dir: str) -> bool:
    return os.path.exists(os.path.join(run_dir, "metrics.json"))


def _clock(s: float) -> str:
    s = int(round(s))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def status(results: str, now: float | None = None) -> dict | None:
    """done, total, elapsed_s, left_s (None until a run of this session has finished)."""
    plan = read_json(os.path.join(results, PLAN))
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
    s = status(results, now)
    if s is None:
        return f"fusionlab progress: no sweep plan under {results} (the sweep has not started)"
    pct = 100 * s["done"] / s["total"] if s["total"] else 100
    left = f"about {_clock(s['left_s'])} left" if s["left_s"] is not None else "time left: after the first run"
    return (f"fusionlab progress: {s['done']}/{s['total']} runs ({pct:.0f}%), "
            f"{_clock(s['elapsed_s'])} elapsed, {left}")
