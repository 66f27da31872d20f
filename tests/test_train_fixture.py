"""A real training step recorded on the GPU machine (tests/data/nsys2025_h100_train): the
measured range holds every kernel its process launched while it was open, autograd's
backward thread and CUDA graph replays included, and the wall time comes from the
untraced timing process. Oracles: a plain SQL query over the export, and nsys's own
`nsys stats` nvtx_kern_sum (its same-thread projection), kept beside the report."""
import json
import os
import sqlite3
import subprocess
import sys

import pandas as pd
import pytest

from conftest import DATA, ROOT

from fusionlab.analysis.run import metrics, run_metrics
from fusionlab.analysis.readers import nsys_sqlite

FIXTURES = ["nsys2025_h100_train/deep_gelu_mlp_eager", "nsys2025_h100_train/deep_gelu_mlp_compile_reduce_overhead"]
# counted once by hand (tests/data/README.md): kernels and summed kernel ns in the measured
# range (5 iterations), by every thread of the process / by the range's own thread
HAND = {FIXTURES[0]: {"process": (170, 625964), "same_thread": (55, 224198)},
        FIXTURES[1]: {"process": (200, 632524), "same_thread": (60, 261702)}}

SQL = """SELECT count(*), sum(k.end - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k
JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId
WHERE r.start >= :start AND r.end <= :end AND {who}"""


def sql_counts(path: str) -> dict:
    """The oracle: kernels whose launching runtime call lies inside the measure range, by
    the range's process (PID = globalTid >> 24) or by its thread, in plain SQL."""
    con = sqlite3.connect(path)
    (start, end, tid), = con.execute(
        "SELECT e.start, e.end, e.globalTid FROM NVTX_EVENTS e LEFT JOIN StringIds s ON s.id = e.textId "
        "WHERE coalesce(e.text, s.value) = 'measure'").fetchall()
    args = {"start": start, "end": end, "tid": tid, "pid": (tid >> 24) & 0xFFFFFF}
    out = {"process": con.execute(SQL.format(who="(r.globalTid >> 24) & 16777215 = :pid"), args).fetchone(),
           "same_thread": con.execute(SQL.format(who="r.globalTid = :tid"), args).fetchone()}
    con.close()
    return out


@pytest.mark.parametrize("name", FIXTURES)
def test_measured_range_counts_every_thread(report, name):
    path = report(name)
    oracle = sql_counts(path)
    assert oracle == HAND[name]
    trace = nsys_sqlite.load(path)
    for attribution, (count, ns) in oracle.items():
        m = metrics.range_metrics(trace, "measure", attribution=attribution)
        assert m["attribution"] == attribution
        assert m["iterations"] == 5
        assert m["kernels"] == count
        assert round(m["kernel_time_ms"] * 1e6) == ns
        assert m["kernels_per_iter"] == count / 5
    # the backward pass is launched from autograd's thread: the same-thread rule misses it
    assert oracle["process"][0] > 2 * oracle["same_thread"][0]
    k = metrics.kernel_table(trace)
    assert int(k["calls"].sum()) == oracle["process"][0]


@pytest.mark.parametrize("name", FIXTURES)
def test_same_thread_view_is_nsys_stats_projection(report, name):
    """nsys stats' nvtx_kern_sum (recorded beside the report) projects kernels by the
    range's own thread: its measure rows add up to our same_thread view."""
    s = pd.read_csv(os.path.join(DATA, name, "nvtx_kern_sum.csv"))
    s = s[s["NVTX Range"] == "fusionlab:measure"]
    m = metrics.range_metrics(nsys_sqlite.load(report(name)), "measure", attribution="same_thread")
    assert int(s["Kern Inst"].sum()) == m["kernels"]
    assert int(s["Total Time (ns)"].sum()) == round(m["kernel_time_ms"] * 1e6)


@pytest.mark.parametrize("name", FIXTURES)
def test_run_metrics_wall_time_is_untraced(report, name):
    d = os.path.join(DATA, name)
    row, kernels = run_metrics.compute(os.path.join(d, "run.json"), report(name), "nsys",
                                       os.path.join(d, "timing.json"))
    with open(os.path.join(d, "timing.json")) as f:
        timing = json.load(f)["timing"]
    assert row["status"] == "ok" and row["attribution"] == "process"
    assert timing["windows_context"] == "untraced"
    assert row["wall_time_per_iter_ms"] == row["untraced_wall_time_per_iter_ms"] == timing["untraced_wall_time_per_iter_ms"]
    assert row["profiler_overhead"] == row["traced_wall_time_per_iter_ms"] / row["wall_time_per_iter_ms"]
    assert row["kernels_per_iter"] == HAND[name]["process"][0] / 5
    assert int(kernels["calls"].sum()) == HAND[name]["process"][0]


def test_failed_untraced_process_fails_the_run(report, tmp_path):
    d = os.path.join(DATA, FIXTURES[0])
    with open(os.path.join(d, "timing.json")) as f:
        timing = json.load(f)
    timing.update(status="oom", reason="CUDA out of memory")
    bad = tmp_path / "timing.json"
    bad.write_text(json.dumps(timing))
    row, _ = run_metrics.compute(os.path.join(d, "run.json"), report(FIXTURES[0]), "nsys", str(bad))
    assert row["status"] == "oom" and "untraced timing process" in row["reason"]


def test_cli_shows_both_attributions_labelled(report):
    p = subprocess.run([sys.executable, "-m", "fusionlab.analysis", report(FIXTURES[0])], cwd=ROOT,
                       capture_output=True, text=True, check=True)
    out = json.loads(p.stdout)
    m = out["ranges"]["fusionlab:measure"]
    assert set(out["attribution"]) == {"process", "same_thread"}
    assert (m["process"]["kernels"], m["same_thread"]["kernels"]) == (170, 55)


def test_run_without_untraced_timing_has_no_wall_time(report):
    """A run recorded before untraced timing (no timing.json, nothing timed outside the
    trace) reports its traced wall time as such, and no wall time or speedup base."""
    d = os.path.join(DATA, "nsys2025_h200/mlp_eager")
    row, _ = run_metrics.compute(os.path.join(d, "run.json"), report("nsys2025_h200/mlp_eager"), "nsys")
    assert row["status"] == "ok"
    assert row["wall_time_per_iter_ms"] is None and row["profiler_overhead"] is None
    assert row["traced_wall_time_per_iter_ms"] > 0
