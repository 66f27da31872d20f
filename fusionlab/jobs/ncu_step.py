"""One run's measured iterations under Nsight Compute: one ncu process per pass
(core.ncu_passes), in order, each after the last ended ok, then ncu.json saying what
happened. docs/ncu.md says what each pass costs and measures.

The runner's own command follows `--`; each process adds `--iters N --windows 0
--profiler none --out DIR/ncu_run.json` (and a short warm-up) so it measures nothing
else. Clocks are left free (`--clock-control none`); each pass sets its cache control.
ncu.json: `settings`, `passes` (the names asked for) and one record per pass (status,
seconds, passes (the most any result took, from ncu's log), results, reason, command,
report, cache_control, iterations; None where not run). A record's status is ok, failed
(ncu's exit status or no result: its log's tail is the reason) or timeout; the step's
status is the steady pass's, or skipped (the run did not end ok untraced). The step
always returns 0 so the sweep completes.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import time
from typing import Callable

from fusionlab.core import ncu_passes
from fusionlab.core import owner as folder_owner
from fusionlab.core.io import read_json
from fusionlab.jobs import slots

SETTINGS = ["--clock-control", "none", "--target-processes", "application-only"]
# the runner under ncu: it takes the host's counters lock before its GPU lock and holds it
# to its exit (jobs.slots.take_counters); Inductor compiles in process (the graphs
# come from the caches the untraced process filled; no compile workers to start under ncu)
PROCESS_ENV = {slots.COUNTERS_ENV: "1", "TORCHINDUCTOR_COMPILE_THREADS": "1"}
_PASSES = re.compile(r"- (\d+) pass(?:es)?\b")


def log_passes(log: str) -> int | None:
    """The most replay passes any result of an ncu log took (`... - 10 passes`), or None."""
    found = [int(n) for n in _PASSES.findall(log or "")]
    return max(found) if found else None


def ncu_command(ncu: str, p: ncu_passes.Pass, out: str) -> list[str]:
    """The ncu command line of pass p in front of the runner's (`-o out`, without .ncu-rep)."""
    return [ncu, "--nvtx", "--nvtx-include", p.nvtx_include, "--replay-mode", p.replay,
            "--cache-control", p.cache_control, *SETTINGS, "--metrics", ",".join(p.metrics),
            "--force-overwrite", "-o", out]


def runner_overrides(run_dir: str, iters: int, warmup: int) -> list[str]:
    """The runner flags that make the ncu process measure ITERS iterations and nothing else
    (argparse keeps the last of a repeated flag)."""
    return ["--iters", str(iters), "--warmup", str(warmup), "--warmup-min-s", "0", "--windows", "0",
            "--profiler", "none", "--out", os.path.join(run_dir, ncu_passes.RUNNER_FILE)]


def _tail(path: str, n: int, start: int) -> str:
    try:
        with open(path, errors="replace") as f:
            f.seek(start)
            return f.read()[-n:].strip()
    except OSError:
        return ""


def profile(cmd: list[str], log: str, timeout: float, rep: str, count: Callable | None) -> dict:
    """Run one ncu process (environment PROCESS_ENV); its record (module doc). count(rep):
    the report's number of results (None: not readable here)."""
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
    rec["passes"] = log_passes(_tail(log, 10**7, start))
    if rc is None:
        rec.update(status="timeout", reason=f"ncu did not finish in {timeout:g} s")
        return rec
    results = count(rep) if (count and os.path.exists(rep)) else None
    rec["results"] = results
    if rc != 0 or not os.path.exists(rep) or results == 0:
        why = f"ncu exit status {rc}" if rc else ("no report written" if not os.path.exists(rep) else
                                                   "no result in the report (no kernel in the NVTX range)")
        rec.update(status="failed", reason=f"{why}: {_tail(log, 300, start)}")
    else:
        rec.update(status="ok", reason=None)
    return rec


def run(run_dir: str, ncu: str, runner: list[str], names: list[str], iters: int = 3, warmup: int = 5,
        timeout: float = 900, log: str | None = None, count: Callable | None = None) -> dict:
    """Profile the run folder's runner command with the passes `names`; writes and returns
    ncu.json's record (module doc)."""
    owner = folder_owner.hold(run_dir, "job")   # writes only while this process owns the folder
    log = log or os.path.join(run_dir, ncu_passes.LOG_FILE)
    out = os.path.join(run_dir, ncu_passes.STEP_FILE)
    timing = read_json(os.path.join(run_dir, "timing.json")) or read_json(os.path.join(run_dir, "run.json")) or {}
    names = [n for n in ncu_passes.ORDER if n in set(names) | {"steady"}]
    rec = {"settings": {"clock_control": "none", "iterations": iters, "warmup": warmup,
                        "nvtx_include": ncu_passes.PASSES["steady"].nvtx_include},
           "ncu": ncu, "passes": names, **{n: None for n in names}}
    open(log, "w").close()
    if timing.get("status") not in (None, "ok"):
        rec.update(status="skipped", reason=f"not run under ncu: the run ended {timing.get('status')}")
        owner.write_json(out, rec)
        return rec
    for name in names:
        p = ncu_passes.PASSES[name]
        n = iters if p.iterations == "step" else 1
        rep = os.path.join(run_dir, p.report)
        cmd = ncu_command(ncu, p, rep[:-len(".ncu-rep")]) + runner + runner_overrides(run_dir, n, warmup)
        rec[name] = {**profile(cmd, log, timeout, rep, count), "cache_control": p.cache_control, "iterations": n}
        if rec["steady"]["status"] != "ok":
            break
    rec["status"], rec["reason"] = rec["steady"]["status"], rec["steady"]["reason"]
    owner.write_json(out, rec)
    with open(log, "a") as f:
        f.write(json.dumps({k: rec[k] for k in ("status", "reason")}) + "\n")
    return rec


USAGE = ("ncu_profile.py --run-dir DIR --ncu NCU [--passes steady,cold,roofline,range] [--iters N] "
         "[--warmup N] [--timeout S] [--log F] -- PYTHON -m fusionlab.runner ARGS...")


def main(argv: list[str], count: Callable | None = None) -> int:
    """The step's command line (USAGE); always 0 once its arguments parse."""
    if "--" not in argv:
        print(USAGE)
        return 2
    cut = argv.index("--")
    p = argparse.ArgumentParser(usage=USAGE)
    p.add_argument("--run-dir", required=True)
    p.add_argument("--ncu", default="ncu")
    p.add_argument("--passes", default=",".join(ncu_passes.DEFAULT))
    p.add_argument("--iters", type=int, default=3)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--timeout", type=float, default=900)
    p.add_argument("--log", default=None)
    a = p.parse_args(argv[:cut])
    bad = [n for n in a.passes.split(",") if n not in ncu_passes.PASSES]
    if bad:
        p.error(f"unknown pass(es) {bad}; known: {list(ncu_passes.PASSES)}")
    run(a.run_dir, a.ncu, argv[cut + 1:], a.passes.split(","), a.iters, a.warmup, a.timeout, a.log, count)
    return 0
