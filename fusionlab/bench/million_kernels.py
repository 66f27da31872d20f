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

`synthetic` writes one process (pid 919, as in the fixture) whose main thread opens the
runner's ranges (fusionlab:build, check, warmup, then measure holding --ranges iteration
ranges, fusionlab/core/ranges.py) and launches the forward kernels of each iteration
(cudaLaunchKernel_v7000, with cudaStreamIsCapturing calls between some), while
autograd's device thread (pt_autograd_0) launches the backward ones (--backward-share of
them), as tests/data/nsys2025_h100_train shows; every kernel is joined to its call by
correlationId, on one stream, 1.5-3.5 us long; the measure range ends with a
cudaDeviceSynchronize.

`measure` runs each tool in a fresh subprocess and reads its CPU time and peak RSS from
getrusage(RUSAGE_CHILDREN) (each tool runs under its own `python -c` wrapper, so the
numbers are that tool's: its largest process's peak RSS, all its processes' CPU time),
and writes measure.csv and measure.json beside the printed table (and the tools' outputs:
analyse.out, the analysis JSON; stats_*.csv). CPU time next to wall time shows when the
host was busy with something else.
"""
from __future__ import annotations

import argparse
import csv
import gzip
import json
import os
import platform
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # the repository
SCHEMA_FIXTURE = os.path.join(ROOT, "tests", "data", "nsys2025_h100_train", "deep_gelu_mlp_eager", "report.sqlite.gz")
# tables whose rows are copied from the fixture as they are (enums, the GPU, the exporter)
COPIED = ("ENUM_", "TARGET_INFO_GPU", "TARGET_INFO_SYSTEM_ENV", "TARGET_INFO_SESSION_START_TIME",
          "META_DATA_EXPORT", "META_DATA_CAPTURE")
GENERATED = ("StringIds", "NVTX_EVENTS", "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_KERNEL",
             "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "ThreadNames", "PROCESSES", "TARGET_INFO_CUDA_DEVICE",
             "TARGET_INFO_CUDA_CONTEXT_INFO", "TARGET_INFO_CUDA_STREAM", "ANALYSIS_DETAILS")
# names of the CUDA calls that launch kernels (nsys_sqlite.LAUNCH_API, spelled out for SQL)
LAUNCH_PREFIXES = ("cudaLaunchKernel", "cudaLaunchCooperativeKernel", "cudaGraphLaunch",
                   "cuLaunchKernel", "cuLaunchCooperativeKernel", "cuGraphLaunch")
NSYS_REPORTS = ("cuda_gpu_kern_sum", "cuda_api_sum", "nvtx_sum", "nvtx_kern_sum")

PID, MAIN_TID, AUTOGRAD_TID, STREAM = 919, 919, 1014, 7
GLOBAL_PID = (1 << 48) | (PID << 24)
# (short name, demangled name) of tiny elementwise kernels, as eager PyTorch names them
KERNELS = [
    ("vectorized_elementwise_kernel", "void at::native::vectorized_elementwise_kernel<(int)4, "
     "at::native::CUDAFunctor_add<float>, std::array<char *, (unsigned long)3>>(int, T2, T3)"),
    ("vectorized_elementwise_kernel", "void at::native::vectorized_elementwise_kernel<(int)4, "
     "at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float>>, "
     "std::array<char *, (unsigned long)3>>(int, T2, T3)"),
    ("vectorized_elementwise_kernel", "void at::native::vectorized_elementwise_kernel<(int)4, "
     "at::native::GeluCUDAKernelImpl(at::TensorIteratorBase &, at::native::GeluType)::[lambda() (instance 1)]"
     "::operator ()() const::[lambda() (instance 2)]::operator ()() const::[lambda(float) (instance 1)], "
     "std::array<char *, (unsigned long)2>>(int, T2, T3)"),
    ("elementwise_kernel", "void at::native::elementwise_kernel<(int)128, (int)4, "
     "at::native::gpu_kernel_impl_nocast<at::native::FillFunctor<float>>(at::TensorIteratorBase &, const T1 &)"
     "::[lambda(int) (instance 1)]>(int, T3)"),
]


def gtid(tid: int) -> int:
    """nsys's serialised globalTid of a thread of PID (vm 1)."""
    return GLOBAL_PID | tid


def copy_schema(con) -> None:
    """The CREATE TABLE statements of a real nsys 2025.3 export (tests/data), and the rows
    of its enum, GPU and exporter tables."""
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "fixture.sqlite")
        with gzip.open(SCHEMA_FIXTURE) as f, open(src, "wb") as g:
            shutil.copyfileobj(f, g)
        fx = sqlite3.connect(src)
        for name, sql in fx.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'").fetchall():
            if name.startswith(COPIED) or name in GENERATED:
                con.execute(sql)
                if name.startswith(COPIED):
                    rows = fx.execute(f"SELECT * FROM {name}").fetchall()
                    if rows:
                        con.executemany(f"INSERT INTO {name} VALUES ({','.join('?' * len(rows[0]))})", rows)
        fx.close()


def synthetic(out: str, kernels: int, ranges: int, backward_share: float = 0.6, seed: int = 0) -> dict:
    """Write a SQLite export of KERNELS tiny kernels in RANGES iteration ranges (module doc)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    if os.path.exists(out):
        os.remove(out)
    con = sqlite3.connect(out)
    con.execute("PRAGMA journal_mode = OFF")
    con.execute("PRAGMA synchronous = OFF")
    copy_schema(con)
    strings = ["[Unknown]", "fusionlab", "build", "check", "warmup", "measure", "iteration",
               "cudaLaunchKernel_v7000", "cudaStreamIsCapturing_v10000", "cudaDeviceSynchronize_v3020",
               "python3", "pt_autograd_0"]
    for short, full in KERNELS:
        strings += [short, full, "_Z" + short]
    sid = {}
    for s in strings:
        sid.setdefault(s, len(sid))
    con.executemany("INSERT INTO StringIds VALUES (?, ?)", [(i, s) for s, i in sid.items()])
    con.executemany("INSERT INTO ThreadNames VALUES (?, 20, ?)",
                    [(sid["python3"], gtid(MAIN_TID)), (sid["pt_autograd_0"], gtid(AUTOGRAD_TID))])
    con.execute("INSERT INTO PROCESSES VALUES (?, ?, ?)", (GLOBAL_PID, PID, "/usr/bin/python3"))
    con.execute("INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (0, 0, ?)", (PID,))
    con.execute("INSERT INTO TARGET_INFO_CUDA_CONTEXT_INFO VALUES (7, 0, 1, ?, 0, 1, 0, 0)", (PID,))
    con.execute("INSERT INTO TARGET_INFO_CUDA_STREAM VALUES (?, 0, 1, ?, 1, 0, 1)", (STREAM, PID))

    launch, capture = sid["cudaLaunchKernel_v7000"], sid["cudaStreamIsCapturing_v10000"]
    t0 = 5_000_000_000
    nvtx, runtime, kern = [], [], []
    state = {"t": t0, "corr": 100, "gpu": t0, "kernels": 0}

    def flush(force: bool = False) -> None:
        if force or len(kern) >= 200_000:
            con.executemany(f"INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES ({','.join('?' * 8)})", runtime)
            con.executemany(f"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES ({','.join('?' * 28)})", kern)
            runtime.clear()
            kern.clear()

    def launch_block(n: int, tid: int) -> None:
        """N launches from thread TID in time order: calls 2-5 us long, 0.3-1.5 us apart,
        a cudaStreamIsCapturing before one in ten; kernels 1.5-3.5 us on one stream, each
        starting 0.8-3 us after its call returns or when the previous kernel ends."""
        if n <= 0:
            return
        dur, gap = rng.integers(2000, 5000, n).tolist(), rng.integers(300, 1500, n).tolist()
        kdur, queue = rng.integers(1500, 3500, n).tolist(), rng.integers(800, 3000, n).tolist()
        which, capturing = rng.integers(0, len(KERNELS), n).tolist(), (rng.random(n) < 0.1).tolist()
        t, g, c, gt = state["t"], state["gpu"], state["corr"], gtid(tid)
        for i in range(n):
            if capturing[i]:
                c += 1
                runtime.append((t, t + 300, 1, gt, c, capture, 0, None))
                t += 700
            c += 1
            le = t + dur[i]
            runtime.append((t, le, 1, gt, c, launch, 0, None))
            s = max(le + queue[i], g)
            g = s + kdur[i]
            short, full = KERNELS[which[i]]
            state["kernels"] += 1
            kern.append((s, g, 0, 1, 0, STREAM, c, GLOBAL_PID, sid[full], sid[short], sid["_Z" + short], 1, 1,
                         16, 1024, 1, 1, 128, 1, 1, 0, 0, 0, 0, state["kernels"], 0, None, 0))
            t = le + gap[i]
        state.update(t=t, gpu=g, corr=c)
        flush()

    def call(name: str, tid: int, dur: int) -> tuple[int, int, int]:
        state["corr"] += 1
        s, e = state["t"], state["t"] + dur
        runtime.append((s, e, 1, gtid(tid), state["corr"], sid[name], 0, None))
        state["t"] = e + 500
        return s, e, state["corr"]

    def push(name: str, start: int, end: int, tid: int = MAIN_TID) -> None:
        nvtx.append((start, end, 59, None, None, 255, None, gtid(tid), None, sid[name], 1)
                    + (None,) * 9)

    nvtx.append((t0 - 1000, None, 75, None, None, None, "fusionlab", gtid(MAIN_TID), None, None, 1) + (None,) * 9)
    for phase, n in (("build", 2), ("check", 4), ("warmup", 8)):
        s = state["t"]
        launch_block(n, MAIN_TID)
        state["t"] = max(state["t"], state["gpu"]) + 20_000
        push(phase, s, state["t"])
    m_start = state["t"]
    per_iter = max(1, kernels // ranges)
    for it in range(ranges):
        s = state["t"]
        n = per_iter if it < ranges - 1 else kernels - per_iter * (ranges - 1)
        nb = int(round(n * backward_share))
        launch_block(n - nb, MAIN_TID)             # forward: the range's own thread
        state["t"] += 8_000                        # autograd's device thread runs the backward
        launch_block(nb, AUTOGRAD_TID)
        state["t"] += 3_000
        push("iteration", s, state["t"])
        state["t"] += 1_000
    sync_s, sync_e, sync_corr = call("cudaDeviceSynchronize_v3020", MAIN_TID,
                                     max(1000, state["gpu"] - state["t"] + 2000))
    con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES (?, ?, 0, 1, NULL, ?, ?, ?, NULL, 3, "
                "4294967295, 4294967295)", (sync_s, sync_e - 500, STREAM, sync_corr, GLOBAL_PID))
    push("measure", m_start, sync_e + 2_000)
    end = sync_e + 10_000
    con.execute("INSERT INTO ANALYSIS_DETAILS VALUES (?, ?, ?, ?)", (1 << 56, end - t0 + 1000, t0 - 1000, end))
    nvtx.sort(key=lambda r: r[0])
    con.executemany(f"INSERT INTO NVTX_EVENTS VALUES ({','.join('?' * 20)})", nvtx)
    flush(force=True)
    con.commit()
    counts = {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
              for t in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS")}
    con.close()
    return {"file": out, "kernels": counts["CUPTI_ACTIVITY_KIND_KERNEL"],
            "runtime_calls": counts["CUPTI_ACTIVITY_KIND_RUNTIME"], "nvtx_events": counts["NVTX_EVENTS"],
            "bytes": os.path.getsize(out)}


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
