"""One run's measured iteration(s) under Nsight Compute, as processes of their own (after
the nsys one), in order:
  bytes:  kernel replay of ncu_report.BYTE_METRICS (one pass: the loop's own bytes, no
          save and restore of memory between passes) -> ncu_bytes.ncu-rep;
  kernel: kernel replay of ncu_report.KERNEL_METRICS (throughput, occupancy, local bytes,
          FLOP instructions; several passes) -> ncu.ncu-rep;
  range:  range replay of ncu_report.RANGE_METRICS over the iteration's NVTX range
          -> ncu_range.ncu-rep;
then ncu.json saying what happened.

    python workflow/scripts/ncu_profile.py --run-dir DIR --ncu NCU --timeout S
        [--no-range] [--replay kernel|application] -- PYTHON -m fusionlab.runner ARGS...

The runner's own arguments follow `--`; this adds `--iters N --windows 0 --profiler none
--out DIR/ncu_run.json` (and a short warm-up) so the process measures nothing else. Only
kernels inside the runner's NVTX range `fusionlab@measure/` (core.ranges) are profiled.
Settings (docs/ncu.md): --cache-control none and --clock-control none, so the bytes are
those of the user's loop with its caches warm and clocks free, not ncu's default
cold-cache, base-clock measurement. ncu.json has one record per process (`bytes`,
`kernel`, `range`: status, seconds, passes, results, reason, command; None where not
run: the other two run only after the bytes process ended ok). A record's status is ok,
failed (ncu's exit status or no result: its log's tail is the reason) or timeout; the
step's status is the bytes process's, or skipped (the run did not end ok untraced). The
step itself always exits 0 so the sweep completes.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time

from fusionlab.analysis.readers import ncu_report
from fusionlab.core import owner as folder_owner
from fusionlab.core import ranges
from fusionlab.core.io import read_json
from fusionlab.experiments import slots

BYTES_REP = "ncu_bytes.ncu-rep"
KERNEL_REP = "ncu.ncu-rep"
RANGE_REP = "ncu_range.ncu-rep"
SETTINGS = ["--cache-control", "none", "--clock-control", "none", "--target-processes", "application-only"]
# the runner under ncu: it takes the host's counters lock before its GPU lock and holds it
# to its exit (experiments.slots.take_counters); Inductor compiles in process (the graphs
# come from the caches the untraced process filled; no compile workers to start under ncu)
PROCESS_ENV = {slots.COUNTERS_ENV: "1", "TORCHINDUCTOR_COMPILE_THREADS": "1"}


def nvtx_filter(name: str) -> str:
    """ncu's --nvtx-include expression of a push/pop range of the project's domain."""
    return f"{ranges.DOMAIN}@{name}/"


def ncu_command(ncu: str, out: str, replay: str, metrics: list[str], include: str) -> list[str]:
    """The ncu command line in front of the runner's (`-o out`, without .ncu-rep)."""
    return [ncu, "--nvtx", "--nvtx-include", include, "--replay-mode", replay, *SETTINGS,
            "--metrics", ",".join(metrics), "--force-overwrite", "-o", out]


def runner_overrides(run_dir: str, iters: int, warmup: int) -> list[str]:
    """The runner flags that make the ncu process measure ITERS iterations and nothing else
    (argparse keeps the last of a repeated flag)."""
    return ["--iters", str(iters), "--warmup", str(warmup), "--warmup-min-s", "0", "--windows", "0",
            "--profiler", "none", "--out", os.path.join(run_dir, "ncu_run.json")]


def _tail(path: str, n: int = 400, start: int = 0) -> str:
    try:
        with open(path, errors="replace") as f:
            f.seek(start)
            return f.read()[-n:].strip()
    except OSError:
        return ""


def profile(cmd: list[str], log: str, timeout: float, rep: str) -> dict:
    """Run one ncu process (environment PROCESS_ENV); its record: status, seconds, passes
    (the most any result took, from ncu's log), results, reason, command."""
    t0 = time.monotonic()
    rec = {"command": shlex.join(cmd), "report": os.path.basename(rep)}
    with open(log, "a") as f:
        f.write(f"$ {rec['command']}\n")
        f.flush()
        start = f.tell()
        try:
            rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, timeout=timeout or None,
                                env={**os.environ, **PROCESS_ENV}).returncode
        except subprocess.TimeoutExpired:
            rc = None
    rec["seconds"] = round(time.monotonic() - t0, 2)
    try:
        with open(log, errors="replace") as f:
            f.seek(start)
            rec["passes"] = ncu_report.passes(f.read())
    except OSError:
        rec["passes"] = None
    if rc is None:
        rec.update(status="timeout", reason=f"ncu did not finish in {timeout:g} s")
        return rec
    results = None
    if os.path.exists(rep) and ncu_report.readable():
        try:
            results = len(ncu_report.read(rep))
        except ncu_report.NcuReportError:
            results = None
    rec["results"] = results
    if rc != 0 or not os.path.exists(rep) or results == 0:
        why = f"ncu exit status {rc}" if rc else ("no report written" if not os.path.exists(rep) else
                                                   "no result in the report (no kernel in the NVTX range)")
        rec.update(status="failed", reason=f"{why}: {_tail(log, 300, start)}")
    else:
        rec.update(status="ok", reason=None)
    return rec


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--" not in argv:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    cut = argv.index("--")
    p = argparse.ArgumentParser()
    p.add_argument("--run-dir", required=True)
    p.add_argument("--ncu", default="ncu")
    p.add_argument("--timeout", type=float, default=600)
    p.add_argument("--iters", type=int, default=1)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--replay", default="kernel", choices=("kernel", "application"))
    p.add_argument("--no-range", action="store_true")
    p.add_argument("--log", default=None)
    a = p.parse_args(argv[:cut])
    runner = argv[cut + 1:]
    d = a.run_dir
    owner = folder_owner.hold(d, "job")   # writes only while this process owns the folder
    log = a.log or os.path.join(d, "ncu.log")
    out = os.path.join(d, "ncu.json")
    timing = read_json(os.path.join(d, "timing.json")) or read_json(os.path.join(d, "run.json")) or {}
    rec = {"settings": {"cache_control": "none", "clock_control": "none", "replay": a.replay,
                        "iterations": a.iters, "nvtx_include": nvtx_filter(ranges.MEASURE)},
           "ncu": a.ncu, "bytes": None, "kernel": None, "range": None}
    open(log, "w").close()
    if timing.get("status") not in (None, "ok"):
        rec.update(status="skipped", reason=f"not run under ncu: the run ended {timing.get('status')}")
        owner.write_json(out, rec)
        return 0
    tail = runner_overrides(d, a.iters, a.warmup)
    measure = nvtx_filter(ranges.MEASURE)
    steps = [("bytes", BYTES_REP, a.replay, ncu_report.BYTE_METRICS, measure),
             ("kernel", KERNEL_REP, a.replay, ncu_report.KERNEL_METRICS, measure)]
    if not a.no_range:
        steps.append(("range", RANGE_REP, "range", ncu_report.RANGE_METRICS, nvtx_filter(ranges.ITERATION)))
    for key, name, replay, metrics, include in steps:
        rep = os.path.join(d, name)
        rec[key] = profile(ncu_command(a.ncu, rep[:-len(".ncu-rep")], replay, metrics, include) + runner + tail,
                           log, a.timeout, rep)
        if rec["bytes"]["status"] != "ok":
            break
    rec["status"] = rec["bytes"]["status"]
    rec["reason"] = rec["bytes"]["reason"]
    owner.write_json(out, rec)
    with open(log, "a") as f:
        f.write(json.dumps({k: rec[k] for k in ("status", "reason")}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
