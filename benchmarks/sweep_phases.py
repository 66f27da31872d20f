"""Where a sweep's untraced processes spent their time: the phases each runner process
records (`phases_s` in timing.json: imports, CUDA start-up, the wait for its GPU slot,
build, check with the compile, warm-up, timing), summed over the runs of a results
folder, with each phase's share, median and maximum. A sweep whose processes mostly wait
for their slot is held up by what runs under the slot (on real networks: the compile in
the check phase).

    python benchmarks/sweep_phases.py RESULTS [--runs LIST]     # LIST: run folders, one a line
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import statistics


def phases(run_dirs: list[str]) -> dict:
    """{phase: {"total_s", "share", "median_s", "max_s"}} over the timing.json of run_dirs
    that ran their check (a run stopped before it has no check phase), plus "runs"."""
    seen = []
    for d in run_dirs:
        try:
            with open(os.path.join(d, "timing.json")) as f:
                p = json.load(f).get("phases_s") or {}
        except (OSError, ValueError):
            continue
        if "check" in p:
            seen.append(p)
    total = sum(sum(p.values()) for p in seen)
    out = {"runs": len(seen)}
    for name in sorted({k for p in seen for k in p}):
        v = [p.get(name, 0.0) for p in seen]
        out[name] = {"total_s": round(sum(v), 1), "share": round(sum(v) / total, 3) if total else None,
                     "median_s": round(statistics.median(v), 1), "max_s": round(max(v), 1)}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results")
    ap.add_argument("--runs", help="a file of run folders (relative to RESULTS), one a line; default: every run")
    a = ap.parse_args(argv)
    if a.runs:
        with open(a.runs) as f:
            dirs = [os.path.join(a.results, line.strip()) for line in f if line.strip()]
    else:
        dirs = sorted(glob.glob(os.path.join(a.results, "runs", "*", "*", "*", "*", "*", "*")))
    print(json.dumps(phases(dirs), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
