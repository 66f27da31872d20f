"""`python -m fusionlab.analysis` on real reports: verdicts that mean what they say, shares
that add up, partial reports refused, several files in one output, one launch per
correlation id (tests/data/foreign and the pipeline's fixtures; tests/data/README.md)."""
import io
import json
import os
import sqlite3
import subprocess

import pandas as pd
import pytest

from conftest import DATA

from fusionlab.analysis import __main__ as cli
from fusionlab.analysis import terminal
from fusionlab.analysis.run import fields as F

NO_NVTX, ASYNC = "foreign/nsys2025_h100_no_nvtx", "foreign/nsys2025_h100_async_ranges"
TRAIN, CPU = "nsys2025_h100_train/deep_gelu_mlp_eager", "nsys2022_cpu/mlp_eager"
TORCH_GPU = os.path.join(DATA, "foreign", "torch_h100_train", "worker0.pt.trace.json.gz")
WHOLE = "(whole report)"
IDLE = ("host_wait", "kernel_wait", "other")


@pytest.fixture
def run(capsys):
    """The command line, in this process: (exit status, stdout, stderr)."""
    def go(*args):
        rc = cli.main(list(args))
        out = capsys.readouterr()
        return subprocess.CompletedProcess(args, rc, out.out, out.err)
    return go


def docs(report):
    return {name: cli.analyse(report(name)) for name in (ASYNC, TRAIN)} | {"torch": cli.analyse(TORCH_GPU)}


def test_shares_add_up_to_one_over_their_window(report):
    for name, doc in docs(report).items():
        for k, v in doc["ranges"].items():
            for a, m in v.items():
                if m.get("gpu_busy_fraction") is None:
                    continue
                cpu = m["gpu_busy_fraction"] + sum(m[f"idle_{c}_frac"] for c in IDLE)
                assert cpu == pytest.approx(1, abs=1e-9), (name, k, a)
                assert 0 <= m["gpu_other_work_frac"] <= 1 - m["gpu_busy_fraction"] + 1e-9
                if k != WHOLE:
                    w = m["window_busy_fraction"] + sum(m[f"window_idle_{c}_frac"] for c in IDLE)
                    assert w == pytest.approx(1, abs=1e-9), (name, k, a)


def test_idle_shares_of_ranges_whose_work_outlives_them_stay_in_the_range(report):
    m = cli.analyse(report(ASYNC))["ranges"]["launch_matmul"]["process"]
    assert m["instances_gpu_after_range"] == 5
    assert m["gpu_busy_fraction"] + sum(m[f"idle_{c}_frac"] for c in IDLE) == pytest.approx(1, abs=1e-12)


def _occupied(path, name):
    """Plain SQL and a sorted loop: per instance of range `name`, the union of every kernel
    of its process clipped to it, summed; and the summed durations."""
    con = sqlite3.connect(path)
    rs = con.execute("SELECT e.start, e.end, e.globalTid FROM NVTX_EVENTS e LEFT JOIN StringIds s ON s.id = e.textId "
                     "WHERE coalesce(e.text, s.value) = ? AND e.eventType = 59", (name,)).fetchall()
    ks = con.execute("SELECT k.start, k.end, r.globalTid FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                     "JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId").fetchall()
    busy = dur = 0
    for lo, hi, tid in rs:
        cur = lo
        for s, e, t in sorted(ks):
            if (t >> 24) != (tid >> 24):
                continue
            s, e = max(s, cur), min(e, hi)
            if e > s:
                busy += e - s
                cur = e
        dur += hi - lo
    return busy, dur


def test_a_synchronize_range_waits_on_the_gpu(report):
    path = report(ASYNC)
    m = cli.analyse(path)["ranges"]["sync"]["process"]
    busy, dur = _occupied(path, "sync")
    assert dur and m["kernels"] == 0 and m["bound"] == F.WAITING
    assert m["gpu_other_work_frac"] == pytest.approx(busy / dur, abs=1e-12)
    assert m["gpu_other_work_frac"] > 0.98


def test_a_range_without_kernels_has_no_gpu_work_of_its_own(report):
    doc = cli.analyse(TORCH_GPU)
    for k in ("## zero_grad ##", "Optimizer.zero_grad#SGD.zero_grad"):
        m = doc["ranges"][k]["process"]
        assert m["kernels"] == 0 and m["bound"] == F.NO_GPU_WORK and m["gpu_other_work_frac"] == 0
    for doc in docs(report).values():
        for v in doc["ranges"].values():
            for m in v.values():
                assert m["kernels"] or m.get("bound") in (None, F.NO_GPU_WORK, F.WAITING)


def test_one_bound_the_table_shows(report):
    doc = cli.analyse(report(ASYNC))
    assert not any("window_bound" in m for v in doc["ranges"].values() for m in v.values())
    shown = {r["range"]: r["bound"] for r in terminal.rows(doc)}
    assert shown == {k: v["process"]["bound"] for k, v in doc["ranges"].items()}
    assert shown["sync"] == F.WAITING and shown["launch_matmul"] == "gpu"


@pytest.mark.parametrize("table, says", [("KERNEL", "948 kernel launch calls but no kernel table"),
                                          ("RUNTIME", "kernels but no CUDA runtime table")])
def test_a_partial_export_is_refused_in_one_line(report, run, table, says):
    path = report(NO_NVTX)
    con = sqlite3.connect(path)
    con.execute(f"DROP TABLE CUPTI_ACTIVITY_KIND_{table}")
    con.commit()
    con.close()
    r = run(path, "--json")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and says in r.stderr and path in r.stderr


def test_a_report_without_cuda_activity_says_so(report):
    doc = cli.analyse(report(CPU))
    assert any("no CUDA activity" in n for n in doc["notes"])
    assert all(m["kernels"] == 0 and m.get("bound") is None for v in doc["ranges"].values() for m in v.values())


def test_several_files_make_one_csv_and_one_json_array(report, run):
    paths = [report(ASYNC), report(CPU), TORCH_GPU]
    one = [pd.read_csv(io.StringIO(run(p, "--csv").stdout)) for p in paths]
    c = run(*paths, "--csv")
    assert c.returncode == 0
    rows = pd.read_csv(io.StringIO(c.stdout))
    assert set(rows.columns) == set().union(*(o.columns for o in one))
    assert list(rows["file"].unique()) == paths and len(rows) == sum(len(o) for o in one)
    for p, o in zip(paths, one):
        mine = rows[rows["file"] == p].reset_index(drop=True)
        pd.testing.assert_frame_equal(mine[o.columns], o, check_dtype=False)
    j = run(*paths, "--json")
    got = json.loads(j.stdout)
    assert [d["file"] for d in got] == paths


def test_a_launch_written_under_two_api_names_counts_once(report):
    """nsys 2022.2 writes each kernel launch as cudaLaunchKernel and cudaLaunchKernel_v7000
    with one correlation id: the real export with each launch call written again so."""
    path = report(ASYNC)
    before = cli.analyse(path)
    con = sqlite3.connect(path)
    (sid,) = con.execute("SELECT max(id) + 1 FROM StringIds").fetchone()
    con.execute("INSERT INTO StringIds VALUES (?, 'cudaLaunchKernel')", (sid,))
    launch = con.execute("SELECT id FROM StringIds WHERE value = 'cudaLaunchKernel_v7000'").fetchone()[0]
    cols = [r[1] for r in con.execute("PRAGMA table_info(CUPTI_ACTIVITY_KIND_RUNTIME)")]
    sel = ", ".join("?" if c == "nameId" else c for c in cols)
    n = con.execute(f"INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME SELECT {sel} FROM CUPTI_ACTIVITY_KIND_RUNTIME "
                    f"WHERE nameId = ?", (sid, launch)).rowcount
    con.commit()
    con.close()
    assert n == 403 and before["ranges"][WHOLE]["process"]["launch_calls"] == 409   # 6 are cuLaunchKernel
    after = cli.analyse(path)
    for k, v in before["ranges"].items():
        for a, m in v.items():
            for f in ("launch_calls", "launch_api_time_ms", "launch_overhead_ratio", "kernels", "launch_api_us"):
                assert after["ranges"][k][a].get(f) == m.get(f), (k, a, f)
    from fusionlab.analysis.readers import nsys_sqlite
    api = nsys_sqlite.load(path).api
    assert int(api["is_launch"].sum()) == 409


def test_hta_defaults_match_hta_and_are_named(tmp_path):
    """--hta against HolisticTraceAnalysis with its own defaults (the last ProfilerStep
    left out, a 30 us kernel-wait threshold) on the public-shaped torch.profiler trace."""
    hta = pytest.importorskip("hta.trace_analysis", reason="HolisticTraceAnalysis not installed (pip install .[test])")
    import shutil
    shutil.copy(TORCH_GPU, tmp_path / "worker0.pt.trace.json.gz")
    a = hta.TraceAnalysis(trace_dir=str(tmp_path))
    df, syms = a.t.get_trace(0), a.t.symbol_table.get_sym_id_map()
    doc, default = cli.analyse(TORCH_GPU, hta=True), cli.analyse(TORCH_GPU)
    assert any("HTA's defaults" in n for n in doc["notes"]) and any("--hta" in n for n in default["notes"])
    assert doc["ranges"]["ProfilerStep"]["process"]["instances"] == 2          # of 3
    assert doc["ranges"][WHOLE]["process"]["kernels"] == (df["cat"] == syms["kernel"]).sum() == 82
    t, d = a.get_temporal_breakdown(visualize=False).iloc[0], doc["whole_report"]["devices"][0]
    us, ops = 1e-3, d["gpu_ops"]
    assert d["span_ms"] == pytest.approx(t["kernel_time(us)"] / 1e3, abs=2 * us)
    assert d["idle_frac"] * d["span_ms"] == pytest.approx(t["idle_time(us)"] / 1e3, abs=ops * us)
    idle = a.get_idle_time_breakdown(visualize=False)[0]                       # HTA's 30 us threshold
    for s in doc["whole_report"]["streams"]:
        h = idle[idle["stream"] == s["stream"]].set_index("idle_category")["idle_time"]
        for c in IDLE:
            assert s[f"idle_{c}_ms"] == pytest.approx(h.get(c, 0) / 1e3, abs=2 * us * s["gpu_ops"])


def test_top_kernels_keep_distinct_names(report):
    top = cli.analyse(report(TRAIN))["whole_report"]["top_kernels"]
    assert len({k["name"] for k in top}) == len(top)
    assert any(k["name"].startswith("void at::native::vectorized_elementwise_kernel<") for k in top)
