"""`python -m fusionlab.analysis` on profiles the pipeline did not make (tests/data/foreign,
README.md there says how they were recorded), against `nsys stats` CSVs saved at
recording time and HolisticTraceAnalysis on the same torch.profiler trace."""
import json
import os
import shutil
import subprocess
import sys

import pandas as pd
import pytest

from fusionlab.analysis import __main__ as cli
from fusionlab.analysis.readers import nsys_sqlite, torch_trace
from fusionlab.analysis.run import fields as F
from fusionlab.analysis import terminal as render
from fusionlab.analysis.run import metrics
from conftest import DATA, ROOT

FOREIGN = os.path.join(DATA, "foreign")
NO_NVTX, ASYNC = "foreign/nsys2025_h100_no_nvtx", "foreign/nsys2025_h100_async_ranges"
TORCH_GPU = os.path.join(FOREIGN, "torch_h100_train", "worker0.pt.trace.json.gz")
TORCH_CPU = os.path.join(FOREIGN, "torch_cpu_train", "worker0.pt.trace.json.gz")
WHOLE = "(whole report)"


def csv(name, report):
    return pd.read_csv(os.path.join(DATA, name, f"{report}.csv"))


def test_no_nvtx_report_gives_the_whole_report_as_nsys_stats_does(report):
    doc = cli.analyse(report(NO_NVTX))
    assert list(doc["ranges"]) == [WHOLE]
    assert any("no NVTX ranges" in n for n in doc["notes"])
    ks = csv(NO_NVTX, "cuda_gpu_kern_sum")
    m = doc["ranges"][WHOLE]["process"]
    assert m["kernels"] == ks["Instances"].sum() == 948
    assert round(m["kernel_time_ms"] * 1e6) == ks["Total Time (ns)"].sum()
    top = doc["whole_report"]["top_kernels"][0]
    assert (top["calls"], round(top["total_ms"] * 1e6)) == (ks["Instances"][0], ks["Total Time (ns)"][0])
    assert sum(d["kernels"] for d in doc["whole_report"]["devices"]) == 948
    assert sorted(s["stream"] for s in doc["whole_report"]["streams"]) == [7, 13]


def test_async_ranges_are_projected_as_nvtx_gpu_proj_sum(report):
    doc = cli.analyse(report(ASYNC))
    proj, nv = csv(ASYNC, "nvtx_gpu_proj_sum"), csv(ASYNC, "nvtx_sum")
    for _, row in proj.iterrows():
        m = doc["ranges"][row["Range"].lstrip(":")]["same_thread"]     # nsys projects the range's own thread
        assert round(m["gpu_proj_ms"] * 1e6) == row["Total Proj Time (ns)"]
        assert m["gpu_proj_instances"] == row["Range Instances"]
        assert m["gpu_ops_per_instance"] * m["instances"] == row["Total GPU Ops"]   # kernels only: no copies there
    for _, row in nv.iterrows():
        m = doc["ranges"][row["Range"].lstrip(":")]["process"]
        assert round(m["duration_ms"] * 1e6) == row["Total Time (ns)"]
        assert m["cpu_ms_per_instance"] == pytest.approx(row["Avg (ns)"] / 1e6)


def test_a_kernel_outliving_its_range_is_judged_over_its_work(report):
    m = cli.analyse(report(ASYNC))["ranges"]["launch_matmul"]["process"]
    assert m["gpu_busy_fraction"] < 0.2                                   # clipped to the 0.36 ms CPU window
    assert m["window"] == "projection" and m["instances_gpu_after_range"] == 5
    assert m["window_busy_fraction"] == 1.0 and m["bound"] == "gpu" and "window_bound" not in m
    assert m["gpu_proj_ms_per_instance"] == pytest.approx(21.274, abs=1e-3)


SYNCED = ["nsys2025_h200/mlp_eager", "nsys2025_h200/pointwise_heavy_compile",
          "nsys2025_h100_train/deep_gelu_mlp_eager", ASYNC]


@pytest.mark.parametrize("name", SYNCED)
def test_synchronized_ranges_keep_their_fields(report, name):
    """analyse's existing fields are metrics.views' and a range that holds its work has
    window fields equal to the CPU-window ones."""
    path = report(name)
    doc = cli.analyse(path)
    views, _ = metrics.views(nsys_sqlite.scan(path))
    for k, v in views.items():
        for a, m in v.items():
            got = doc["ranges"][k][a]
            same = {f: v for f, v in metrics.clean(m).items() if f != "bound"}   # analyse's: the work window's
            assert {f: got[f] for f in same} == same
            if got.get("window") == "range" and got.get("bound"):
                assert got["window_busy_fraction"] == got["gpu_busy_fraction"]
                assert got["bound"] == m["bound"]
                for c in ("host_wait", "kernel_wait", "other"):
                    assert got[f"window_idle_{c}_frac"] == got[f"idle_{c}_frac"]


def test_torch_trace_steps_and_annotations_are_ranges():
    doc = cli.analyse(TORCH_GPU)
    r = doc["ranges"]
    assert r["ProfilerStep"]["process"]["instances"] == 3                 # schedule(active=3)
    for a in ("## zero_grad ##", "## forward ##", "## backward ##", "## optimizer ##"):
        assert r[a]["process"]["instances"] == 3
    assert r[WHOLE]["process"]["kernels"] == 123
    assert r["ProfilerStep"]["process"]["kernels"] == 123               # every kernel launched inside a step
    assert [(s["stream"], s["kernels"]) for s in doc["whole_report"]["streams"]] == [(7, 123), (13, 0)]
    cpu = cli.analyse(TORCH_CPU)
    assert cpu["device"] == "cpu" and cpu["ranges"]["ProfilerStep"]["process"]["instances"] == 3


def _hta(trace):
    hta = pytest.importorskip("hta.trace_analysis", reason="HolisticTraceAnalysis not installed (pip install .[test])")
    return hta.TraceAnalysis(trace_dir=os.path.dirname(trace), include_last_profiler_step=True)


def test_torch_trace_breakdowns_match_hta(tmp_path):
    shutil.copy(TORCH_GPU, tmp_path / "worker0.pt.trace.json.gz")
    a = _hta(str(tmp_path / "worker0.pt.trace.json.gz"))
    df, syms = a.t.get_trace(0), a.t.symbol_table.get_sym_id_map()
    doc = cli.analyse(TORCH_GPU)
    assert (df["cat"] == syms["kernel"]).sum() == doc["ranges"][WHOLE]["process"]["kernels"]
    t = a.get_temporal_breakdown(visualize=False).iloc[0]
    d = doc["whole_report"]["devices"][0]
    us = 1e-3            # HTA keeps whole microseconds: each activity's start and duration lose up to 1 us
    ops = d["gpu_ops"]
    assert d["span_ms"] == pytest.approx(t["kernel_time(us)"] / 1e3, abs=2 * us)
    assert d["idle_frac"] * d["span_ms"] == pytest.approx(t["idle_time(us)"] / 1e3, abs=ops * us)
    assert d["compute_frac"] * d["span_ms"] == pytest.approx(t["compute_time(us)"] / 1e3, abs=ops * us)
    assert d["non_compute_frac"] * d["span_ms"] == pytest.approx(t["non_compute_time(us)"] / 1e3, abs=ops * us)
    idle = a.get_idle_time_breakdown(visualize=False, consecutive_kernel_delay=int(F.KERNEL_WAIT_US))[0]
    for s in doc["whole_report"]["streams"]:
        h = idle[idle["stream"] == s["stream"]].set_index("idle_category")["idle_time"]
        for c in ("host_wait", "kernel_wait", "other"):
            assert s[f"idle_{c}_ms"] == pytest.approx(h.get(c, 0) / 1e3, abs=2 * us * s["gpu_ops"])


def test_gzipped_and_plain_traces_read_the_same(tmp_path):
    import gzip
    plain = tmp_path / "trace.json"
    plain.write_bytes(gzip.open(TORCH_GPU).read())
    a, b = torch_trace.load(TORCH_GPU), torch_trace.load(str(plain))
    pd.testing.assert_frame_equal(a.kernels, b.kernels)
    pd.testing.assert_frame_equal(a.ranges, b.ranges)


def test_output_modes(report, tmp_path):
    path = report(ASYNC)
    text = render.text(cli.analyse(path))
    assert "launch_matmul" in text and "projection" in text and "(whole report)" in text
    env = {**os.environ, "PYTHONPATH": ROOT}
    run = lambda *a: subprocess.run([sys.executable, "-m", "fusionlab.analysis", *a], capture_output=True,
                                     text=True, env=env, cwd=ROOT)
    j = run(path)                                    # not a terminal: JSON
    assert j.returncode == 0 and json.loads(j.stdout)["ranges"]["step"]["process"]["instances"] == 5
    c = run(path, "--csv")
    rows = pd.read_csv(pd.io.common.StringIO(c.stdout))
    assert set(rows["key"]) == {"launch_matmul", "launch_small", "step", "sync", WHOLE}
    assert len(rows) == 4 * 2 + 1
