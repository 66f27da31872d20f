"""Can `fusionlab analyse` read a million-kernel nsys report in seconds and bounded memory?

Target: a report of 1,000,000 tiny kernels in 1,000 NVTX iteration ranges analysed in at
most 5 s and 500 MB peak RSS, with `nsys stats` beside it (benchmarks/results/h100-million-kernels).

    # CPU: a SQLite with nsys 2025.3's schema (the CREATE TABLE statements of a real export
    # in tests/data) and rows shaped like a training step's
    python benchmarks/million_kernels.py synthetic --kernels 1000000 --ranges 1000 --out X.sqlite
    # GPU (nsys on PATH, torch with CUDA): a real report of the same shape
    python benchmarks/million_kernels.py generate --out DIR [--kernels 1000000 --ranges 1000]
    # time and peak RSS of `fusionlab analyse` and of `nsys stats` (when on PATH), each in
    # its own process; --check compares the analysis with plain SQL over the same file
    python benchmarks/million_kernels.py measure X.sqlite --check --out DIR

`synthetic` writes the export fusionlab.bench.synthetic_export describes. `measure` runs each tool in a fresh subprocess and reads its CPU time and peak RSS from
getrusage(RUSAGE_CHILDREN) (each tool runs under its own `python -c` wrapper, so the
numbers are that tool's: its largest process's peak RSS, all its processes' CPU time),
and writes measure.csv and measure.json beside the printed table (and the tools' outputs:
analyse.out, the analysis JSON; stats_*.csv). CPU time next to wall time shows when the
host was busy with something else.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import shutil
import sqlite3
import subprocess
import sys
import time

from fusionlab.bench.synthetic_export import synthetic

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # the repository
# names of the CUDA calls that launch kernels (nsys_sqlite.LAUNCH_API, spelled out for SQL)
LAUNCH_PREFIXES = ("cudaLaunchKernel", "cudaLaunchCooperativeKernel", "cudaGraphLaunch",
                   "cuLaunchKernel", "cuLaunchCooperativeKernel", "cuGraphLaunch")
NSYS_REPORTS = ("cuda_gpu_kern_sum", "cuda_api_sum", "nvtx_sum", "nvtx_kern_sum")


# --- generate: a real report on the GPU ------------------------------------------------

def workload(kernels: int, ranges: int, backward_share: float, device: str = "cuda") -> None:
    """The traced process (`generate` runs it under nsys): RANGES iteration ranges inside the
    runner's measure range (fusionlab/core/ranges.py, NVTX domain fusionlab), each launching
    its share of KERNELS one-element add_ kernels: the forward share from the main thread,
    the rest from a second thread (as autograd's device thread launches the backward)."""
    import threading

    import torch
    from fusionlab.core import ranges as R
    try:
        import nvtx

        def rng(name):
            return nvtx.annotate(name, domain=R.DOMAIN)
    except ImportError:            # no domain then: the analysis falls back to the bare names
        import contextlib

        @contextlib.contextmanager
        def rng(name):
            torch.cuda.nvtx.range_push(name)
            yield
            torch.cuda.nvtx.range_pop()

    x = torch.zeros(1, device=device)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    with rng(R.WARMUP):
        for _ in range(100):
            x.add_(1)
        sync()
    go, done = threading.Semaphore(0), threading.Semaphore(0)
    todo = [0]

    def backward_thread():
        while True:
            go.acquire()
            if todo[0] < 0:
                return
            for _ in range(todo[0]):
                x.add_(1)
            done.release()

    th = threading.Thread(target=backward_thread, name="pt_autograd_0", daemon=True)
    th.start()
    per_iter = max(1, kernels // ranges)
    with rng(R.MEASURE):
        for it in range(ranges):
            n = per_iter if it < ranges - 1 else kernels - per_iter * (ranges - 1)
            nb = int(round(n * backward_share))
            with rng(R.ITERATION):
                for _ in range(n - nb):
                    x.add_(1)
                todo[0] = nb
                go.release()
                done.acquire()
        sync()
    todo[0] = -1
    go.release()
    th.join()
    print(json.dumps({"kernels": kernels, "ranges": ranges, "x": float(x.item())}))


def generate(out: str, kernels: int, ranges: int, backward_share: float) -> dict:
    """Profile workload() under nsys (-t cuda,nvtx -s none --cpuctxsw=none) and export the
    report to SQLite: OUT/report.nsys-rep, OUT/report.sqlite."""
    if not shutil.which("nsys"):
        raise SystemExit("generate: nsys is not on PATH")
    os.makedirs(out, exist_ok=True)
    rep = os.path.join(out, "report")
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    timings = {}
    t = time.perf_counter()
    subprocess.run(["nsys", "profile", "-t", "cuda,nvtx", "-s", "none", "--cpuctxsw=none", "--force-overwrite", "true",
                    "-o", rep, sys.executable, "-m", "fusionlab.bench.million_kernels", "workload", "--kernels", str(kernels),
                    "--ranges", str(ranges), "--backward-share", str(backward_share)], check=True, env=env)
    timings["profile_s"] = time.perf_counter() - t
    t = time.perf_counter()
    subprocess.run(["nsys", "export", "--type", "sqlite", "--force-overwrite", "true", "-o", rep + ".sqlite",
                    rep + ".nsys-rep"], check=True)
    timings["export_s"] = time.perf_counter() - t
    con = sqlite3.connect(rep + ".sqlite")
    n = con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    con.close()
    return {"report": rep + ".sqlite", "kernels_in_report": n, "bytes": os.path.getsize(rep + ".sqlite"),
            **{k: round(v, 1) for k, v in timings.items()}}


# --- measure ------------------------------------------------------------------------------

# runs one tool as its own child and reports its wall time and peak RSS (the largest RSS of
# the processes it waited for: the tool and, for nsys, the processes it starts)
WRAP = """
import json, resource, subprocess, sys, time
out, stdout, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
t = time.perf_counter()
with open(stdout, "wb") as f:
    p = subprocess.run(cmd, stdout=f, stderr=subprocess.PIPE)
wall = time.perf_counter() - t
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
json.dump({"rc": p.returncode, "wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime, "peak_rss_mb": ru.ru_maxrss / 1024,
           "stderr": p.stderr.decode(errors="replace")[-2000:]}, open(out, "w"))
"""
# the pandas path: every row in pandas (nsys_sqlite.load), range by range
PANDAS = ("import json, sys; from fusionlab.analysis.run import metrics; from fusionlab.analysis.readers import nsys_sqlite; "
          "v, _ = metrics.views(nsys_sqlite.load(sys.argv[1])); "
          "print(json.dumps({'ranges': {k: {a: metrics.clean(m) for a, m in x.items()} for k, x in v.items()}}))")


def run_tool(label: str, cmd: list[str], out: str, stem: str) -> dict:
    res = os.path.join(out, stem + ".rusage.json")
    env = {**os.environ, "PYTHONPATH": ROOT + os.pathsep + os.environ.get("PYTHONPATH", "")}
    subprocess.run([sys.executable, "-c", WRAP, res, os.path.join(out, stem + ".out"), *cmd], check=True, env=env)
    with open(res) as f:
        r = json.load(f)
    os.remove(res)
    return {"tool": label, "command": " ".join(cmd), **r}


def oracle(path: str) -> dict:
    """Plain SQL over the export (no fusionlab code): per fusionlab range name and
    attribution, the kernels whose launch call (LAUNCH_PREFIXES, joined on correlationId)
    lies inside one of its instances, by the range's process or its thread:
    count and summed duration; and the iteration ranges inside the measure range."""
    con = sqlite3.connect(f"file:{os.path.abspath(path)}?mode=ro", uri=True)
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master")}
    con.executescript("""
        CREATE TEMP TABLE rng AS
          SELECT coalesce(e.text, s.value) AS name, e.start, e.end, e.globalTid AS tid
          FROM NVTX_EVENTS e LEFT JOIN StringIds s ON s.id = e.textId
          WHERE e.eventType IN (59, 60) AND e.end IS NOT NULL AND e.domainId IN (
            SELECT domainId FROM NVTX_EVENTS d LEFT JOIN StringIds ds ON ds.id = d.textId
            WHERE d.eventType = 75 AND coalesce(d.text, ds.value) = 'fusionlab');
        CREATE TEMP TABLE kl (ls INTEGER, le INTEGER, tid INTEGER, d INTEGER);
        CREATE INDEX temp.kl_ls ON kl(ls);
    """)
    if {"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME"} <= tables:
        launch = " OR ".join(f"value GLOB '{p}*'" for p in LAUNCH_PREFIXES)
        con.execute(f"""
            INSERT INTO kl SELECT r.start, r.end, r.globalTid, k.end - k.start
            FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId
            WHERE r.nameId IN (SELECT id FROM StringIds WHERE {launch})""")
    who = {"process": "(kl.tid >> 24) & 16777215 = (rng.tid >> 24) & 16777215", "same_thread": "kl.tid = rng.tid"}
    out = {"kernels_in_file": con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
           if "CUPTI_ACTIVITY_KIND_KERNEL" in tables else 0,
           "ranges": {}}
    for (name,) in con.execute("SELECT DISTINCT name FROM rng ORDER BY name").fetchall():
        out["ranges"][name] = {a: list(con.execute(
            f"SELECT count(*), coalesce(sum(d), 0) FROM (SELECT DISTINCT kl.rowid, kl.d "
            f"FROM rng CROSS JOIN kl INDEXED BY kl_ls "
            f"ON kl.ls >= rng.start AND kl.ls <= rng.end AND kl.le <= rng.end WHERE rng.name = ? AND {w})",
            (name,)).fetchone()) for a, w in who.items()}
    out["iterations_in_measure"] = con.execute(
        "SELECT count(*) FROM rng i JOIN rng m ON m.name = 'measure' AND i.name = 'iteration' "
        "AND i.start >= m.start AND i.end <= m.end AND i.tid = m.tid").fetchone()[0]
    con.close()
    return out


def same_fields(expected: dict, got: dict) -> bool:
    """Every range, attribution and field of `expected` has the same value in `got` (which
    may hold more ranges and fields: analyse adds the whole report and the GPU projection)."""
    return all(k in got and a in got[k] and {f: got[k][a].get(f) for f in m} == m
               for k, v in expected.items() for a, m in v.items())


def check(analysis: dict, sql: dict, pandas: dict | None = None) -> list[dict]:
    """The analysis' kernel counts and summed kernel ns per range and attribution against the
    SQL oracle (and every metric against the pandas path's, where it ran)."""
    rows = []
    for name, views in sql["ranges"].items():
        got = analysis["ranges"].get(f"fusionlab:{name}", {})
        for a, (count, ns) in views.items():
            m = got.get(a, {})
            mine = (m.get("kernels", 0), round((m.get("kernel_time_ms") or 0) * 1e6))
            rows.append({"what": f"fusionlab:{name} {a} kernels, ns", "analysis": mine, "oracle": (count, ns),
                         "ok": mine == (count, ns)})
    meas = analysis["ranges"].get("fusionlab:measure", {}).get("process", {})
    iters = meas.get("iterations") or 0   # a report without a measure range has none
    rows.append({"what": "iterations in measure", "analysis": iters,
                 "oracle": sql["iterations_in_measure"], "ok": iters == sql["iterations_in_measure"]})
    if pandas is not None:
        rows.append({"what": "every metric, streamed = pandas path", "analysis": "streamed", "oracle": "pandas",
                     "ok": same_fields(pandas["ranges"], analysis["ranges"])})
    return rows


def measure(report: str, out: str, do_check: bool, pandas: bool) -> dict:
    os.makedirs(out, exist_ok=True)
    results = [run_tool("fusionlab analyse", [sys.executable, "-m", "fusionlab.cli", "analyse", report], out, "analyse")]
    if pandas:
        results.append(run_tool("in-memory path (load, then metrics)", [sys.executable, "-c", PANDAS, report], out, "pandas"))
    if shutil.which("nsys"):
        results.append(run_tool("nsys stats (4 reports)", [
            "nsys", "stats", "--force-export=false", "-r", ",".join(NSYS_REPORTS), "-f", "csv",
            "--force-overwrite", "true", "-o", os.path.join(out, "stats"), report], out, "nsys_stats"))
    else:
        results.append({"tool": "nsys stats (4 reports)", "rc": None, "note": "nsys not on PATH"})
    info = {"report": os.path.abspath(report), "bytes": os.path.getsize(report), "host": platform.node(),
            "cpus": os.cpu_count(), "python": platform.python_version(), "results": results}
    if do_check:
        with open(os.path.join(out, "analyse.out")) as f:
            analysis = json.load(f)
        pan = None
        if pandas and results[1]["rc"] == 0:
            with open(os.path.join(out, "pandas.out")) as f:
                pan = json.load(f)
        t = time.perf_counter()
        sql = oracle(report)
        info["oracle"] = {**sql, "seconds": round(time.perf_counter() - t, 1)}
        info["check"] = check(analysis, sql, pan)
    with open(os.path.join(out, "measure.json"), "w") as f:
        json.dump(info, f, indent=2, default=str)
    with open(os.path.join(out, "measure.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["tool", "wall_s", "cpu_s", "peak_rss_mb", "rc", "report", "bytes", "host"])
        for r in results:
            w.writerow([r["tool"], _num(r.get("wall_s")), _num(r.get("cpu_s")), _num(r.get("peak_rss_mb")), r.get("rc"),
                        info["report"], info["bytes"], info["host"]])
    return info


def _num(v):
    return "" if v is None else round(v, 2)


def show(info: dict) -> str:
    lines = [f"{info['report']} ({info['bytes'] / 1e6:.0f} MB), {info['host']}, {info['cpus']} CPUs",
             f"{'tool':34s} {'wall s':>8s} {'CPU s':>8s} {'peak RSS MB':>12s}  rc"]
    for r in info["results"]:
        lines.append(f"{r['tool']:34s} {_num(r.get('wall_s'))!s:>8s} {_num(r.get('cpu_s'))!s:>8s} "
                     f"{_num(r.get('peak_rss_mb'))!s:>12s}  "
                     f"{r.get('rc')}{'  ' + r['note'] if r.get('note') else ''}"
                     + (f"  {r['stderr'].strip().splitlines()[-1][:120]}" if r.get("rc") and r.get("stderr") else ""))
    for c in info.get("check", []):
        lines.append(f"check {'ok ' if c['ok'] else 'BAD'} {c['what']}: {c['analysis']} (oracle {c['oracle']})")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("synthetic", help="CPU: a SQLite export with nsys's schema and a training step's shape")
    s.add_argument("--kernels", type=int, default=1_000_000)
    s.add_argument("--ranges", type=int, default=1_000)
    s.add_argument("--backward-share", type=float, default=0.6,
                   help="share of each iteration's kernels launched by autograd's thread")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--out", required=True)
    for name, helptext in (("generate", "GPU: a real report under nsys (nsys on PATH, torch with CUDA)"),
                           ("workload", "the traced process of generate")):
        g = sub.add_parser(name, help=helptext)
        g.add_argument("--kernels", type=int, default=1_000_000)
        g.add_argument("--ranges", type=int, default=1_000)
        g.add_argument("--backward-share", type=float, default=0.6)
        if name == "generate":
            g.add_argument("--out", required=True, help="folder for report.nsys-rep and report.sqlite")
        else:
            g.add_argument("--device", default="cuda", help="cpu: try the workload without a GPU")
    m = sub.add_parser("measure", help="time and peak RSS of fusionlab analyse and nsys stats on a report")
    m.add_argument("report")
    m.add_argument("--out", help="folder for measure.csv, measure.json and the tools' outputs "
                                 "(default: REPORT's name + .measure)")
    m.add_argument("--check", action="store_true", help="compare the analysis with plain SQL over the file")
    m.add_argument("--pandas", action="store_true", help="also time the pandas path (nsys_sqlite.load + metrics)")
    a = p.parse_args(argv)
    if a.cmd == "synthetic":
        t = time.perf_counter()
        info = synthetic(a.out, a.kernels, a.ranges, a.backward_share, a.seed)
        print(json.dumps({**info, "seconds": round(time.perf_counter() - t, 1)}))
    elif a.cmd == "workload":
        workload(a.kernels, a.ranges, a.backward_share, a.device)
    elif a.cmd == "generate":
        print(json.dumps(generate(a.out, a.kernels, a.ranges, a.backward_share)))
    elif a.cmd == "measure":
        info = measure(a.report, a.out or os.path.splitext(a.report)[0] + ".measure", a.check, a.pandas)
        print(show(info))
        if not all(c["ok"] for c in info.get("check", [])) or info["results"][0]["rc"] != 0:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
