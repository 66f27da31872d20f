"""The SQLite reader and metrics on real nsys reports, checked against `nsys stats`
output recorded for the same file (tests/data/README.md says how they were made)."""
import os
import sys

import pandas as pd
import pytest

from fusionlab.analysis.run import metrics
from fusionlab.analysis.readers import nsys_sqlite
from fusionlab.analysis.readers.trace import ReportError
import metrics_oracle
from conftest import DATA

GPU = ["nsys2025_h200/mlp_eager", "nsys2025_h200/mlp_compile",
       "nsys2025_h200/pointwise_heavy_eager", "nsys2025_h200/pointwise_heavy_compile"]


def stats(name, canon):
    return pd.read_csv(os.path.join(DATA, name, f"{canon}.csv"))


@pytest.mark.parametrize("name", GPU)
def test_ranges_match_nvtx_sum(report, name):
    t = nsys_sqlite.load(report(name))
    nv = stats(name, "nvtx_sum")
    for _, row in nv.iterrows():
        domain, rname = row["Range"].split(":", 1)
        rs = t.ranges[(t.ranges["name"] == rname) & (t.ranges["domain"] == domain)]
        assert len(rs) == row["Instances"]
        assert int((rs["end"] - rs["start"]).sum()) == row["Total Time (ns)"]


@pytest.mark.parametrize("name", GPU)
def test_kernels_match_kern_sum(report, name):
    t = nsys_sqlite.load(report(name))
    ks = stats(name, "kern_sum")
    assert len(t.kernels) == ks["Instances"].sum()
    assert int((t.kernels["end"] - t.kernels["start"]).sum()) == ks["Total Time (ns)"].sum()


@pytest.mark.parametrize("name", GPU)
def test_measure_range_kernels_match_nvtx_kern_sum(report, name):
    t = nsys_sqlite.load(report(name))
    m = metrics.range_metrics(t, "measure")
    nk = stats(name, "nvtx_kern_sum")
    nk = nk[nk["NVTX Range"] == "fusionlab:measure"]
    assert m["kernels"] == nk["Kern Inst"].sum()
    assert round(m["kernel_time_ms"] * 1e6) == nk["Total Time (ns)"].sum()


def test_mlp_eager_exact(report):
    """Hand-checked against nvtx_sum.csv and nvtx_kern_sum.csv of the same file."""
    m = metrics.range_metrics(nsys_sqlite.load(report("nsys2025_h200/mlp_eager")), "measure")
    assert m["iterations"] == 5
    assert m["duration_ms"] == pytest.approx(0.914751, abs=1e-9)          # nvtx_sum Total Time
    assert m["kernels"] == 50 and m["kernels_per_iter"] == 10.0          # 5+15+5+5+10+5+5
    assert m["kernel_time_ms"] == pytest.approx(0.135838, abs=1e-9)      # summed Total Time
    assert m["launch_calls"] == 50
    assert m["launch_overhead_ratio"] == pytest.approx(m["launch_api_time_ms"] / 0.135838)


def test_pointwise_fusion_visible(report):
    eager = metrics.range_metrics(nsys_sqlite.load(report("nsys2025_h200/pointwise_heavy_eager")), "measure")
    comp = nsys_sqlite.load(report("nsys2025_h200/pointwise_heavy_compile"))
    cm = metrics.range_metrics(comp, "measure")
    assert eager["kernels_per_iter"] == 35.0      # seed 002: 35 launches per forward
    assert cm["kernels_per_iter"] == 1.0
    names = set(comp.kernels["name"])
    assert "triton_poi_fused_abs_add_cos_div_mul_relu_sigmoid_sin_tanh_0" in names


def test_meta_and_gpu(report):
    t = nsys_sqlite.load(report("nsys2025_h200/mlp_eager"))
    assert t.tool_version.startswith("2025.3")
    assert t.gpu == "NVIDIA H200" and t.device == "cuda"


def test_cpu_report_2022(report):
    """nsys 2022.4 on a CPU-only machine: NVTX ranges, no CUPTI tables."""
    name = "nsys2022_cpu/mlp_eager"
    t = nsys_sqlite.load(report(name))
    assert t.tool_version.startswith("2022.4") and t.device == "cpu"
    assert t.kernels.empty and t.api.empty
    nv = stats(name, "nvtx_sum")
    meas = nv[nv["Range"] == "fusionlab:measure"].iloc[0]
    m = metrics.range_metrics(t, "measure")
    assert m["iterations"] == 5 and m["kernels"] == 0
    assert round(m["duration_ms"] * 1e6) == meas["Total Time (ns)"]
    assert m["gpu_time_per_iter_ms"] is None and m["launch_overhead_ratio"] is None


# --- bad input: one line naming the file ---------------------------------------------

def _one_line(e, path):
    msg = str(e.value)
    assert "\n" not in msg and path in msg
    return msg


def test_missing(tmp_path):
    p = str(tmp_path / "nope.sqlite")
    with pytest.raises(ReportError) as e:
        nsys_sqlite.load(p)
    assert "no such file" in _one_line(e, p)


def test_empty(tmp_path):
    p = tmp_path / "empty.sqlite"; p.write_bytes(b"")
    with pytest.raises(ReportError) as e:
        nsys_sqlite.load(str(p))
    assert "empty" in _one_line(e, str(p))


def test_not_sqlite(tmp_path):
    p = tmp_path / "junk.sqlite"; p.write_bytes(b"\x00garbage" * 100)
    with pytest.raises(ReportError) as e:
        nsys_sqlite.load(str(p))
    assert "not an SQLite file" in _one_line(e, str(p))


def test_truncated(report, tmp_path):
    src = report("nsys2025_h200/mlp_eager")
    p = tmp_path / "trunc.sqlite"
    p.write_bytes(open(src, "rb").read()[:200_000])
    with pytest.raises(ReportError) as e:
        nsys_sqlite.load(str(p))
    _one_line(e, str(p))


def test_foreign_sqlite(tmp_path):
    import sqlite3
    p = tmp_path / "foreign.sqlite"
    con = sqlite3.connect(p); con.execute("CREATE TABLE users(id, name)"); con.commit(); con.close()
    with pytest.raises(ReportError) as e:
        nsys_sqlite.load(str(p))
    assert "not an nsys export" in _one_line(e, str(p))


def test_other_version_missing_columns(report, tmp_path):
    """A report whose kernel table lacks the columns this reader needs."""
    import shutil
    import sqlite3
    p = str(tmp_path / "renamed.sqlite")
    shutil.copy(report("nsys2025_h200/mlp_eager"), p)
    con = sqlite3.connect(p)
    con.execute("CREATE TABLE K2 AS SELECT start, end FROM CUPTI_ACTIVITY_KIND_KERNEL")
    con.execute("DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL")
    con.execute("ALTER TABLE K2 RENAME TO CUPTI_ACTIVITY_KIND_KERNEL")
    con.commit(); con.close()
    with pytest.raises(ReportError) as e:
        nsys_sqlite.load(p)
    assert "CUPTI_ACTIVITY_KIND_KERNEL" in _one_line(e, p)


def test_union_ns():
    assert metrics_oracle.union_ns([0, 5, 20], [10, 15, 30]) == 25
    assert metrics_oracle.union_ns([0, 5], [10, 15], 2, 12) == 10
    assert metrics_oracle.union_ns([], []) == 0


NSYS_IMPORT_FAILURE = """\
Importer error status: Importation failed.
      Items {
        Type: ErrorText
        Value: "Multiple different definitions of the same VmTidToPidInfo"
      }
Generated:
\t/x/report.nsys-rep.tmp.qdstrm
"""


# stands in for `nsys profile ... python -m fusionlab.runner ...`: writes the run's
# record (status from argv) and, from attempt GOOD_FROM on, the report; before, it prints
# what nsys's importer printed on the H100 and writes no report. Counts attempts in a file.
FAKE_NSYS = """\
import json, os, sys
run, report, status, good_from, counter = sys.argv[1:6]
n = int(open(counter).read()) + 1 if os.path.exists(counter) else 1
open(counter, "w").write(str(n))
json.dump({"model": "m", "variant": "v", "batch": 1, "status": status,
           "reason": None if status == "ok" else "did not finish"}, open(run, "w"))
if n >= int(good_from):
    open(report + ".tmp.nsys-rep", "w").write("report")
else:
    open(report + ".tmp.qdstrm", "w").write("trace")
    print(os.environ["IMPORT_FAILURE"])
"""


def _profile(tmp_path, monkeypatch, status, good_from):
    import json
    from fusionlab.jobs import nsys_profile
    script = tmp_path / "fake_nsys.py"
    script.write_text(FAKE_NSYS)
    monkeypatch.setenv("IMPORT_FAILURE", NSYS_IMPORT_FAILURE)
    run, log, rep = tmp_path / "run.json", tmp_path / "profile.log", tmp_path / "report.nsys-rep"
    cmd = [sys.executable, str(script), str(run), str(rep), status, str(good_from), str(tmp_path / "n")]
    assert nsys_profile.main([str(run), str(log), str(rep), "--", *cmd]) == 0
    attempts = int((tmp_path / "n").read_text())
    return json.loads(run.read_text()), log.read_text(), rep, attempts


def test_a_run_whose_profile_nsys_could_not_import_is_profiled_again(tmp_path, monkeypatch):
    r, log, rep, attempts = _profile(tmp_path, monkeypatch, "ok", good_from=2)
    assert attempts == 2 and rep.read_text() == "report"
    assert r["status"] == "ok" and "profile_error" not in r
    assert r["profile_attempts"] == 2
    assert r["profile_retried_for"] == ["Multiple different definitions of the same VmTidToPidInfo"]
    assert "profiling the run again (attempt 2 of 2)" in log
    assert not (tmp_path / "report.nsys-rep.tmp.qdstrm").exists()


def test_a_profile_that_worked_the_first_time_is_not_redone(tmp_path, monkeypatch):
    r, log, rep, attempts = _profile(tmp_path, monkeypatch, "ok", good_from=1)
    assert attempts == 1 and rep.read_text() == "report"
    assert r["status"] == "ok" and "profile_attempts" not in r


@pytest.mark.parametrize("status,expect,attempts", [("timeout", "timeout", 1), ("ok", "error", 2)])
def test_no_report_keeps_the_record(tmp_path, monkeypatch, status, expect, attempts):
    # nsys's importer failed (its text as an H100 run printed it), twice for an ok run, once
    # for a timed-out one (not retried): the run keeps its record, says why it has no
    # profile, and an ok run without its profile becomes an error
    from fusionlab.analysis.run import run_metrics
    from fusionlab.analysis.readers.nsys_stats import export_stats
    r, log, rep, ran = _profile(tmp_path, monkeypatch, status, good_from=3)
    assert ran == attempts
    assert r["profile_error"] == "nsys wrote no report: Multiple different definitions of the same VmTidToPidInfo"
    assert r["status"] == expect
    assert r["reason"] == ("did not finish" if status != "ok" else r["profile_error"])
    assert r.get("profile_attempts") == (2 if status == "ok" else None)
    assert f"[fusionlab] {r['profile_error']} (run status: {expect})" in log
    assert rep.exists() and rep.stat().st_size == 0
    # the steps after it read the empty marker as "no report"
    sqlite = tmp_path / "report.sqlite"
    sqlite.write_bytes(b"")
    manifest = export_stats(str(sqlite), str(tmp_path / "stats"))
    assert "nsys wrote none" in manifest["note"]
    row = run_metrics.main(str(tmp_path / "run.json"), str(sqlite), "nsys", str(tmp_path / "metrics.json"))
    assert row["status"] == expect


def test_a_run_that_wrote_no_record_under_nsys_is_recorded_from_its_flags(tmp_path):
    # the runner crashed under nsys (no run.json): the record names the run and says why
    import json
    from fusionlab.jobs import nsys_profile
    run, log, rep = tmp_path / "run.json", tmp_path / "profile.log", tmp_path / "report.nsys-rep"
    cmd = [sys.executable, "-c", "import sys; print('Segmentation fault'); sys.exit(139)",
           "--model", "mlp", "--variant", "eager", "--batch", "64", "--mode", "inference"]
    assert nsys_profile.main([str(run), str(log), str(rep), "--", *cmd]) == 0
    r = json.loads(run.read_text())
    assert (r["model"], r["variant"], r["batch"], r["mode"], r["status"]) == ("mlp", "eager", 64, "inference", "error")
    assert r["reason"] == r["profile_error"] == "nsys wrote no report: nsys exit status 139"
    assert "Segmentation fault" in log.read_text()


@pytest.mark.parametrize("status", ["timeout", "incorrect", "oom"])
def test_a_failed_untraced_run_is_recorded_without_nsys(tmp_path, status):
    # the untraced process timed out (or was wrong, or ran out of memory): the nsys
    # process is not started, the record says why, the later steps see "no report"
    import json
    from fusionlab.analysis.run import run_metrics
    from fusionlab.jobs import not_profiled
    timing = tmp_path / "timing.json"
    timing.write_text(json.dumps({"model": "m", "variant": "v", "batch": 1, "status": status,
                                  "reason": "did not finish in 150 s (in its warmup phase)"}))
    run, rep = tmp_path / "run.json", tmp_path / "report.nsys-rep"
    assert not_profiled.main([str(timing), str(run), str(rep)]) == 0
    r = json.loads(run.read_text())
    assert r["status"] == status and r["reason"] == "did not finish in 150 s (in its warmup phase)"
    assert r["profile_skipped"] == f"not run under nsys: its untraced process ended {status} (timing.json)"
    assert rep.exists() and rep.stat().st_size == 0
    sqlite = tmp_path / "report.sqlite"
    sqlite.write_bytes(b"")
    row = run_metrics.main(str(run), str(sqlite), "nsys", str(tmp_path / "metrics.json"), timing_json=str(timing))
    assert (row["status"], row["reason"]) == (status, r["reason"])


@pytest.mark.parametrize("timing", ['{"status": "ok"}', "{trunc", None])
def test_an_ok_or_unreadable_untraced_run_is_profiled(tmp_path, timing):
    from fusionlab.jobs import not_profiled
    path = tmp_path / "timing.json"
    if timing is not None:
        path.write_text(timing)
    run, rep = tmp_path / "run.json", tmp_path / "report.nsys-rep"
    assert not_profiled.main([str(path), str(run), str(rep)]) == not_profiled.PROFILE_IT
    assert not run.exists() and not rep.exists()


def test_compile_fields_come_from_the_first_process():
    from fusionlab.analysis.run.run_metrics import compile_fields
    cold = {"compile_latency_s": 9.0, "compile": {"graph_breaks": 0, "generated_kernels": 3,
                                                  "fx_graph_cache_hits": 0, "fx_graph_cache_misses": 1}}
    warm = {"compile_latency_s": 2.0, "compile": {"graph_breaks": 0, "generated_kernels": 3,
                                                  "fx_graph_cache_hits": 1, "fx_graph_cache_misses": 0}}
    assert compile_fields(warm, cold) == {"compile_latency_s": 9.0, "graph_breaks": 0,
                                          "generated_kernels": 3, "compile_cache": "cold"}
    assert compile_fields(warm, None)["compile_cache"] == "warm"
    old = {"compile_latency_s": 1.0, "compile": {"graph_breaks": 1, "generated_kernels": 2}}
    assert compile_fields(old, {"status": "ok"})["compile_cache"] is None  # timing.json without compile fields
    assert compile_fields({"compile_latency_s": 0.01, "compile": None}, None)["compile_cache"] is None


def test_eager_has_no_compile_latency():
    """A real eager record (its variant's first call warm after the check's eager call: a
    negative difference) gives no compile latency."""
    import json
    from fusionlab.analysis.run.run_metrics import compile_fields
    d = os.path.join(DATA, "nsys2025_h100_train", "deep_gelu_mlp_eager")
    run, timing = (json.load(open(os.path.join(d, f))) for f in ("run.json", "timing.json"))
    assert timing["compile_latency_s"] < 0 and run["variant"] == "eager"
    assert compile_fields(run, timing)["compile_latency_s"] is None


def test_compile_cost_prefers_cold_compiles():
    import numpy as np
    import pandas as pd
    from fusionlab.analysis.sweep.tables import compile_cost
    g = pd.DataFrame({"compile_latency_s": [9.0, 2.0, 2.2], "compile_cache": ["cold", "warm", "warm"]})
    assert compile_cost(g) == (9.0, "cold")
    assert compile_cost(g.iloc[1:]) == (2.1, "warm")
    assert compile_cost(pd.DataFrame({"compile_latency_s": [0.1, 0.3]})) == (0.2, None)
    lat, cache = compile_cost(g.iloc[:0])
    assert np.isnan(lat) and cache is None


def test_no_report_reason_falls_back_to_the_importer_status_then_the_last_line():
    from fusionlab.jobs.nsys_profile import nsys_error
    assert nsys_error("Importer error status: An unknown error occurred.\nImport Failed with unexpected "
                      "exception:\nGenerated:\n\tx.qdstrm\n") == "importer error: An unknown error occurred."
    assert nsys_error("a\n\nnsys: something broke\n\n") == "nsys: something broke"
    assert nsys_error("") == "no output"
