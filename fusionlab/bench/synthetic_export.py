"""A synthetic nsys export for the million-kernel benchmark (fusionlab.bench.million_kernels):
a SQLite with nsys 2025.3's schema (the CREATE TABLE statements of a real export in
tests/data) and rows shaped like a training step's.

synthetic() writes one process (pid 919, as in the fixture) whose main thread opens the
runner's ranges (fusionlab:build, check, warmup, then measure holding --ranges iteration
ranges, fusionlab/core/ranges.py) and launches the forward kernels of each iteration
(cudaLaunchKernel_v7000, with cudaStreamIsCapturing calls between some), while
autograd's device thread (pt_autograd_0) launches the backward ones (--backward-share of
them), as tests/data/nsys2025_h100_train shows; every kernel is joined to its call by
correlationId, on one stream, 1.5-3.5 us long; the measure range ends with a
cudaDeviceSynchronize.
"""
from __future__ import annotations

import gzip
import os
import shutil
import sqlite3
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # the repository
SCHEMA_FIXTURE = os.path.join(ROOT, "tests", "data", "nsys2025_h100_train", "deep_gelu_mlp_eager", "report.sqlite.gz")
# tables whose rows are copied from the fixture as they are (enums, the GPU, the exporter)
COPIED = ("ENUM_", "TARGET_INFO_GPU", "TARGET_INFO_SYSTEM_ENV", "TARGET_INFO_SESSION_START_TIME",
          "META_DATA_EXPORT", "META_DATA_CAPTURE")
GENERATED = ("StringIds", "NVTX_EVENTS", "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_KERNEL",
             "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "ThreadNames", "PROCESSES", "TARGET_INFO_CUDA_DEVICE",
             "TARGET_INFO_CUDA_CONTEXT_INFO", "TARGET_INFO_CUDA_STREAM", "ANALYSIS_DETAILS")

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
