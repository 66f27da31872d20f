"""analysis.run.single_pass gives `fusionlab analyse` the values of the separate passes
(whole.with_activity, stream.views, projection.projections, gpu_ops + whole.gpu_breakdown),
on real exports and on one edited to hold the cases those passes treat apart: a launch
call that shares its correlation id with another call (before it and after it), a kernel
without a launch call, an NCCL kernel, a memory copy tied with a kernel on its stream, a
second process."""
import gzip
import os
import shutil
import sqlite3

import numpy as np
import pytest

from fusionlab.analysis import __main__ as cli
from fusionlab.analysis.readers import nsys_arrow, nsys_pass, nsys_sqlite
from fusionlab.analysis.run import single_pass

DATA = os.path.join(os.path.dirname(__file__), "data")
REPORTS = ["nsys2025_h200/mlp_eager", "foreign/nsys2025_h100_async_ranges", "foreign/nsys2025_h100_no_nvtx"]

pytestmark = pytest.mark.skipif(not nsys_arrow.available(), reason="needs adbc-driver-sqlite")


def _unzip(rel: str, tmp_path) -> str:
    out = tmp_path / (rel.replace("/", "_") + ".sqlite")
    with gzip.open(os.path.join(DATA, rel, "report.sqlite.gz")) as f, open(out, "wb") as g:
        shutil.copyfileobj(f, g)
    return str(out)


def _both_ways(path: str, monkeypatch, hta: bool = False) -> tuple[dict, dict]:
    assert single_pass.usable(nsys_sqlite.Report(path))
    one = cli.analyse(path, hta)
    with monkeypatch.context() as m:
        m.setattr(single_pass, "usable", lambda report: False)
        apart = cli.analyse(path, hta)
    return one, apart


@pytest.mark.parametrize("rel", REPORTS)
def test_one_pass_gives_the_separate_passes_values(rel, tmp_path, monkeypatch):
    one, apart = _both_ways(_unzip(rel, tmp_path), monkeypatch)
    assert one == apart
    assert one["ranges"]["(whole report)"]["process"]["kernels"] > 0


def _edit(path: str) -> dict:
    con = sqlite3.connect(path)
    r, k, mc = "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY"
    sync = con.execute("SELECT id FROM StringIds WHERE value LIKE 'cudaStreamSynchronize%'").fetchone()[0]
    launch = con.execute("SELECT id FROM StringIds WHERE value = 'cudaLaunchKernel_v7000'").fetchone()[0]
    corrs = [c for (c,) in con.execute(f"SELECT correlationId FROM {k} ORDER BY start LIMIT 30")]
    # another call with a launch's id, after it; and one before it (the launch written again last)
    row_after = con.execute(f"SELECT start FROM {r} WHERE correlationId = ?", (corrs[3],)).fetchone()[0]
    con.execute(f"INSERT INTO {r} SELECT start + 1, end + 1, eventClass, globalTid, correlationId, {sync}, "
                f"returnValue, callchainId FROM {r} WHERE correlationId = ?", (corrs[3],))
    row = con.execute(f"SELECT rowid, * FROM {r} WHERE correlationId = ? ORDER BY rowid", (corrs[5],)).fetchone()
    con.execute(f"DELETE FROM {r} WHERE rowid = ?", (row[0],))
    con.execute(f"INSERT INTO {r} VALUES (?, ?, ?, ?, ?, {sync}, ?, ?)", (row[1] - 50_000, row[2] - 40_000,
                                                                         *row[3:6], *row[7:]))
    con.execute(f"INSERT INTO {r} VALUES (?, ?, ?, ?, ?, ?, ?, ?)", row[1:])
    # a kernel no call launched, and an NCCL kernel
    con.execute(f"INSERT INTO {k} SELECT start + 7, end + 9, deviceId, contextId, greenContextId, streamId, "
                f"999999991, globalPid, demangledName, shortName, mangledName, launchType, cacheConfig, "
                f"registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ, staticSharedMemory, "
                f"dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, gridId, sharedMemoryExecuted, "
                f"graphNodeId, sharedMemoryLimitConfig FROM {k} WHERE correlationId = ?", (corrs[10],))
    nid = con.execute("SELECT max(id) + 1 FROM StringIds").fetchone()[0]
    con.execute("INSERT INTO StringIds VALUES (?, 'ncclDevKernel_AllReduce_Sum_f32')", (nid,))
    con.execute(f"UPDATE {k} SET shortName = ? WHERE correlationId = ?", (nid, corrs[12]))
    # a memory copy with a kernel's start, end and stream (kernels come first), launched by a synchronize
    con.execute(f"INSERT INTO {mc} SELECT k.start, k.end, k.deviceId, m.contextId, m.greenContextId, k.streamId, "
                f"?, m.globalPid, m.bytes, m.copyKind, m.deprecatedSrcId, m.srcKind, m.dstKind, m.srcDeviceId, "
                f"m.srcContextId, m.dstDeviceId, m.dstContextId, m.migrationCause, m.graphNodeId, m.virtualAddress, "
                f"m.copyCount FROM {k} k, (SELECT * FROM {mc} LIMIT 1) m WHERE k.correlationId = ?",
                (corrs[3], corrs[20]))
    # a second process: one launch and its kernel
    tid = con.execute(f"SELECT globalTid FROM {r} LIMIT 1").fetchone()[0] + (7 << 24)
    end = con.execute(f"SELECT max(end) FROM {k}").fetchone()[0]
    con.execute(f"INSERT INTO {r} VALUES (?, ?, 1, ?, 999999992, ?, 0, NULL)", (end + 1000, end + 5000, tid, launch))
    con.execute(f"INSERT INTO {k} SELECT {end} + 3000, {end} + 9000, deviceId, contextId, greenContextId, 99, "
                f"999999992, globalPid, demangledName, shortName, mangledName, launchType, cacheConfig, "
                f"registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ, staticSharedMemory, "
                f"dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, gridId, sharedMemoryExecuted, "
                f"graphNodeId, sharedMemoryLimitConfig FROM {k} WHERE correlationId = ?", (corrs[1],))
    con.commit()
    con.close()
    return {"after": (corrs[3], row_after), "before": (corrs[5], row[1] - 50_000)}


@pytest.mark.parametrize("held", [True, False])
@pytest.mark.parametrize("rel", ["nsys2025_h200/mlp_eager", "foreign/nsys2025_h100_no_nvtx"])
def test_kernels_held_or_streamed_give_the_same_values(rel, held, tmp_path, monkeypatch):
    """Kernels held in memory (held_kernels) or streamed twice (kernel_times, kernel_rows),
    in the file's order (as nsys writes them) or sorted by SQLite (a kernel written last
    that starts earlier): the separate passes' values either way."""
    path = _unzip(rel, tmp_path)
    if not held:
        monkeypatch.setattr(nsys_pass, "HELD", 0)
    one, apart = _both_ways(path, monkeypatch)
    assert one == apart
    con = sqlite3.connect(path)
    con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL "
                "WHERE rowid = (SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL)")
    con.execute("DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid = (SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL)")
    con.commit()
    con.close()
    s, e, _ = next(nsys_pass.kernel_times(nsys_sqlite.Report(path)))
    assert not nsys_pass.sorted_after(None, s, e)[0]
    moved, moved_apart = _both_ways(path, monkeypatch)
    assert moved == moved_apart == one


@pytest.mark.parametrize("hta", [False, True])
def test_one_pass_on_the_cases_the_passes_treat_apart(hta, tmp_path, monkeypatch):
    path = _unzip("nsys2025_h200/mlp_eager", tmp_path)
    first = _edit(path)
    one, apart = _both_ways(path, monkeypatch, hta)
    assert one == apart
    wr = one["whole_report"]
    assert len([s for s in wr["streams"] if s["stream"] == 99]) == 1          # the second process's stream
    assert wr["devices"][0]["compute_frac"] < wr["devices"][0]["busy_ms"] / wr["devices"][0]["span_ms"]
    calls = nsys_pass.Calls(nsys_sqlite.Report(path))
    for corr, start in first.values():       # the first call of the id, whichever API it is
        assert calls.first_call(np.array([corr]))[0] == start
