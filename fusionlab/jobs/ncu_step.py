"""One run's measured iterations under Nsight Compute: one ncu process per pass
(core.ncu_passes), in order, each after the last ended ok, then ncu.json saying what
happened. docs/ncu.md says what each pass costs and measures.

The runner's own command follows `--`; each process adds `--iters N --windows 0
--profiler none --out DIR/ncu_run.json` (and a short warm-up) so it measures nothing
else. Clocks are left free (`--clock-control none`); each pass sets its cache control.
ncu.json: `settings`, `passes` (the names asked for) and one record per pass (status,
seconds, passes (the most any result took, from ncu's log), results, reason, command,
report, cache_control, iterations; None where not run), and `selection` where the step
profiles only the kernels that carry the most time (`--top-kernels N`, with `--top-share S`
more names until they carry S of it; select_kernels:
the names, their share of the kernel time, the kernel-replay passes' name filter). A
record's status is ok, failed
(ncu's exit status or no result: its log's tail is the reason) or timeout; the step's
status is the steady pass's, or skipped (the run did not end ok untraced). The step
always returns 0 so the sweep completes.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
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
# the runner under ncu: it takes the host's counters lock before it claims a GPU and holds it
# to its exit (jobs.slots.take_counters); Inductor compiles in process (the graphs
# come from the caches the untraced process filled; no compile workers to start under ncu)
PROCESS_ENV = {slots.COUNTERS_ENV: "1", "TORCHINDUCTOR_COMPILE_THREADS": "1"}
_PASSES = re.compile(r"- (\d+) pass(?:es)?\b")


def log_passes(log: str) -> int | None:
    """The most replay passes any result of an ncu log took (`... - 10 passes`), or None."""
    found = [int(n) for n in _PASSES.findall(log or "")]
    return max(found) if found else None


KERNEL_TABLE = "kernels.csv"   # the run's nsys kernel table (analysis.run.metrics.kernel_table)
REGEX_SPECIAL = set("\\^$.|?*+()[]{}")


def select_kernels(table: str, top: int, share: float = 0.0) -> dict:
    """The `top` kernel names that carry the most GPU time in the run's nsys kernel table
    (kernels.csv: one row per kernel, its short name `name` and `time_per_iter_us` over the
    measured iterations), by time then name, and more in that order until the names carry
    at least `share` of the kernel time (0: the `top` alone). Short names are the kernel's
    function name without scopes, templates or parameters, the name ncu matches with
    `--kernel-name-base function`, so a name stands for every kernel that has it. Returns
    {top_kernels, top_share, names, time_us_selected, time_us_total, time_share (selected /
    total), names_total, active (fewer names than the table has: a filter is needed),
    reason (why there is no selection, else None)}."""
    out = {"top_kernels": top, "top_share": share, "names": [], "time_us_selected": None, "time_us_total": None,
           "time_share": None, "names_total": 0, "active": False, "reason": None}
    per_name: dict[str, float] = {}
    try:
        with open(table, newline="") as f:
            for r in csv.DictReader(f):
                t = float(r.get("time_per_iter_us") or "nan")
                if r.get("name") and not math.isnan(t):
                    per_name[r["name"]] = per_name.get(r["name"], 0.0) + t
    except (OSError, ValueError) as e:
        out["reason"] = f"no kernel table to select from ({type(e).__name__}: {e}): every kernel profiled"
        return out
    total = sum(per_name.values())
    if not per_name or total <= 0:
        out["reason"] = f"{os.path.basename(table)} has no kernel time: every kernel profiled"
        return out
    ranked = sorted(per_name.items(), key=lambda x: (-x[1], x[0]))
    n, chosen = 0, 0.0
    while n < len(ranked) and (n < top or chosen < share * total):
        chosen += ranked[n][1]
        n += 1
    ranked = ranked[:n]
    out.update(names=[n for n, _ in ranked], time_us_selected=chosen, time_us_total=total,
               time_share=chosen / total, names_total=len(per_name), active=len(ranked) < len(per_name))
    return out


def _regex_escape(name: str) -> str:
    """A name as a regular expression that matches it literally (only the characters that
    are special in ECMAScript and POSIX extended expressions escaped)."""
    return "".join("\\" + c if c in REGEX_SPECIAL else c for c in name)


def name_filter(names: list[str]) -> list[str]:
    """ncu's options that profile only the kernels whose function name is one of `names`."""
    return ["--kernel-name-base", "function", "--kernel-name",
            "regex:^(" + "|".join(_regex_escape(n) for n in names) + ")$"]


_METRIC_NAME = re.compile(r"^\s*([a-z0-9]+__[a-z0-9_]+)\b")


def known_metrics(ncu: str) -> frozenset:
    """The base metric names `ncu --query-metrics` lists for this machine's GPU (empty
    where it cannot say)."""
    try:
        out = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True, timeout=120).stdout
    except (OSError, subprocess.SubprocessError):
        return frozenset()
    return frozenset(m.group(1) for line in out.splitlines() if (m := _METRIC_NAME.match(line)))


def pass_metrics(p: ncu_passes.Pass, known: frozenset) -> tuple[list[str], list[str]]:
    """(asked, left out): pass p's metrics without the optional ones (core.ncu_passes.
    OPTIONAL_METRICS) whose base name is not among `known`; ncu fails a whole pass on one
    name it does not know."""
    out = [m for m in p.metrics if m in ncu_passes.OPTIONAL_METRICS and m.split(".")[0] not in known]
    return [m for m in p.metrics if m not in out], out


def ncu_command(ncu: str, p: ncu_passes.Pass, out: str, names: list[str] | None = None,
                metrics: list[str] | None = None) -> list[str]:
    """The ncu command line of pass p in front of the runner's (`-o out`, without .ncu-rep);
    `names`: only the kernels of those function names (kernel-replay passes; a range-replay
    pass replays whole iterations); `metrics`: in place of the pass's own."""
    only = name_filter(names) if names and p.replay == "kernel" else []
    return [ncu, "--nvtx", "--nvtx-include", p.nvtx_include, "--replay-mode", p.replay,
            "--cache-control", p.cache_control, *SETTINGS, "--metrics", ",".join(metrics or p.metrics),
            *only, "--force-overwrite", "-o", out]


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
        timeout: float = 900, log: str | None = None, count: Callable | None = None, top_kernels: int = 0,
        kernel_table: str | None = None, top_share: float = 0.0) -> dict:
    """Profile the run folder's runner command with the passes `names`; writes and returns
    ncu.json's record (module doc). top_kernels > 0: only the kernels of the names that
    carry the most time in `kernel_table` (default the run folder's kernels.csv), at least
    top_share of it (select_kernels)."""
    owner = folder_owner.hold(run_dir, "job")   # writes only while this process owns the folder
    log = log or os.path.join(run_dir, ncu_passes.LOG_FILE)
    out = os.path.join(run_dir, ncu_passes.STEP_FILE)
    timing = read_json(os.path.join(run_dir, "timing.json")) or read_json(os.path.join(run_dir, "run.json")) or {}
    names = [n for n in ncu_passes.ORDER if n in set(names) | {"steady"}]
    rec = {"settings": {"clock_control": "none", "iterations": iters, "warmup": warmup,
                        "nvtx_include": ncu_passes.PASSES["steady"].nvtx_include,
                        **({"top_kernels": top_kernels} if top_kernels else {}),
                        **({"top_share": top_share} if top_kernels and top_share else {})},
           "ncu": ncu, "passes": names, **{n: None for n in names}}
    open(log, "w").close()
    if timing.get("status") not in (None, "ok"):
        rec.update(status="skipped", reason=f"not run under ncu: the run ended {timing.get('status')}")
        owner.write_json(out, rec)
        return rec
    only = None
    if top_kernels:
        sel = select_kernels(kernel_table or os.path.join(run_dir, KERNEL_TABLE), top_kernels, top_share)
        only = sel["names"] if sel["active"] else None
        rec["selection"] = {**sel, "filter": shlex.join(name_filter(only)) if only else None}
    # asked once, and only where a pass has a metric this GPU's ncu may not know
    optional = any(ncu_passes.OPTIONAL_METRICS & set(ncu_passes.PASSES[n].metrics) for n in names)
    known = known_metrics(ncu) if optional else frozenset()
    for name in names:
        p = ncu_passes.PASSES[name]
        n = iters if p.iterations == "step" else 1
        rep = os.path.join(run_dir, p.report)
        metrics, left_out = pass_metrics(p, known)
        cmd = ncu_command(ncu, p, rep[:-len(".ncu-rep")], only, metrics) + runner + runner_overrides(run_dir, n, warmup)
        rec[name] = {**profile(cmd, log, timeout, rep, count), "cache_control": p.cache_control, "iterations": n,
                     **({"metrics_not_on_this_gpu": left_out} if left_out else {})}
        if rec["steady"]["status"] != "ok":
            break
    rec["status"], rec["reason"] = rec["steady"]["status"], rec["steady"]["reason"]
    owner.write_json(out, rec)
    with open(log, "a") as f:
        f.write(json.dumps({k: rec[k] for k in ("status", "reason")}) + "\n")
    return rec


USAGE = ("ncu_profile.py --run-dir DIR --ncu NCU [--passes steady,cold,roofline,range] [--iters N] "
         "[--warmup N] [--timeout S] [--log F] [--top-kernels N [--top-share S] [--kernel-table CSV]] "
         "-- PYTHON -m fusionlab.runner ARGS...")


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
    p.add_argument("--top-kernels", type=int, default=0)
    p.add_argument("--top-share", type=float, default=0.0)
    p.add_argument("--kernel-table", default=None)
    a = p.parse_args(argv[:cut])
    bad = [n for n in a.passes.split(",") if n not in ncu_passes.PASSES]
    if bad:
        p.error(f"unknown pass(es) {bad}; known: {list(ncu_passes.PASSES)}")
    run(a.run_dir, a.ncu, argv[cut + 1:], a.passes.split(","), a.iters, a.warmup, a.timeout, a.log, count,
        a.top_kernels, a.kernel_table, a.top_share)
    return 0
