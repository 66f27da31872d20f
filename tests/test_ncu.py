"""The Nsight Compute step (docs/ncu.md): the report reader against ncu's own CSV of the
same real report, the per-kernel and per-run traffic, the tables' measured columns, the
profiling step's failure records, Table 8.1."""
import gzip
import json
import math
import os
import shutil
import subprocess
import sys
import time

import pandas as pd
import pytest

from fusionlab.analysis.readers import ncu_report
from fusionlab.analysis.run import traffic as run_traffic
from fusionlab.analysis.sweep import decompose, traffic
from fusionlab.plan import sweep

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE = os.path.join(ROOT, "tests", "data", "ncu_h100")
PROFILE = os.path.join(ROOT, "workflow", "scripts", "ncu_profile.py")
needs_module = pytest.mark.skipif(not ncu_report.available(), reason=ncu_report.MISSING_MODULE)


def _raw(name):
    with open(os.path.join(FIXTURE, f"{name}_raw.csv")) as f:
        return ncu_report.parse_raw_csv(f.read())


def _report(name, tmp_path):
    """The fixture report, unpacked (kept gzipped: tests/data/ncu_h100/README.md)."""
    out = tmp_path / f"{name}.ncu-rep"
    with gzip.open(os.path.join(FIXTURE, f"{name}.ncu-rep.gz")) as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return str(out)


@needs_module
@pytest.mark.parametrize("name", ["oracle", "oracle_range"])
def test_reader_matches_ncus_own_csv_of_the_same_report(name, tmp_path):
    """Every column read through ncu_report equals `ncu --import --csv --page raw` of the
    same report (recorded on the H100, tests/data/ncu_h100/README.md)."""
    rows, raw = ncu_report.load(_report(name, tmp_path)), _raw(name)
    assert len(rows) == len(raw) > 0
    for r, c in zip(rows, raw):
        assert r["name"] == c["name"]
        assert ncu_report.kernel_key(r["full_name"]) == ncu_report.kernel_key(c["full_name"])
        for col in (*ncu_report.COLUMNS.values(), "flops"):
            a, b = r[col], c[col]
            if isinstance(b, float) and math.isnan(b):
                continue
            # the CSV prints percentages with 2 decimals
            assert a == pytest.approx(b, rel=1e-3, abs=0.006 if col.endswith("_pct") or "_pct_" in col else 1e-6), \
                (name, col)


def test_nsys_and_ncu_names_of_one_kernel_share_a_key():
    """The sigmoid kernel of lstm_cell eager on the H100: nsys's demangled name and ncu's
    (results/ledger of config/ledger.yaml), which name the function's namespace apart."""
    nsys = ("void at::native::elementwise_kernel<(int)128, (int)2, void at::native::gpu_kernel_impl_nocast<"
            "at::native::sigmoid_kernel_cuda(at::TensorIteratorBase &)::[lambda() (instance 2)]::operator ()() "
            "const::[lambda() (instance 2)]::operator ()() const::[lambda(float) (instance 1)]>(at::TensorIteratorBase &, "
            "const T1 &)::[lambda(int) (instance 1)]>(int, T3)")
    ncu = ("void at::elementwise_kernel<128, 2, void at::gpu_kernel_impl_nocast<at::sigmoid_kernel_cuda("
           "at::TensorIteratorBase &)::[lambda() (instance 2)]::operator ()() const::[lambda() (instance 2)]::operator "
           "()() const::[lambda(float) (instance 1)]>(at::TensorIteratorBase &, const T1 &)::[lambda(int) (instance 1)]>"
           "(int, T3)")
    assert ncu_report.kernel_key(nsys) == ncu_report.kernel_key(ncu)
    assert ncu_report.kernel_key(nsys) != ncu_report.kernel_key(nsys.replace("sigmoid", "tanh"))


def test_the_oracle_kernels_measure_their_known_bytes():
    """The small working set (1 MiB in, 1 MiB out, far below L2), repeated: after the first
    launch its DRAM bytes are near 0; its L2 bytes at least the 2 MiB the SMs move (lts__t_bytes
    counts every L2 slice access: on the H100 about twice that, docs/ncu.md)."""
    raw = _raw("oracle")
    n = 1 << 20
    assert len(raw) == 4
    for r in raw[1:]:
        assert (r["dram_read_bytes"] + r["dram_write_bytes"]) / (2 * n) < 0.05
        assert 1 <= r["l2_bytes"] / (2 * n) < 2.5
        assert r["flops"] == pytest.approx(n / 4, rel=0.01)   # one fmul per fp32 element


def test_kernel_table_sums_per_iteration_and_derives_bandwidth():
    rows = [ncu_report._row(i, "k", name, {"gpu__time_duration.sum": 1e3, "dram__bytes_read.sum": 4e6,
                                           "dram__bytes_write.sum": 1e6, "lts__t_bytes.sum": 8e6,
                                           "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": 1e6})
            for i, name in enumerate(["a", "b", "a", "b"])]
    k = run_traffic.kernel_table(rows, iters=2)
    a = k.set_index("full_name").loc["a"]
    assert a["ncu_calls_per_iter"] == 1 and a["dram_bytes"] == 5e6 and a["l2_bytes"] == 8e6
    assert a["dram_bandwidth_Bps"] == pytest.approx(5e6 / 1e-6)
    assert a["flops"] == 2e6 and a["measured_intensity"] == pytest.approx(0.4)
    run = run_traffic.run_fields(rows, k, 2, None, [{"dram_read_bytes": 3.0, "dram_write_bytes": 1.0,
                                                     "l2_bytes": 9.0, "ncu_time_ns": 2e3}])
    assert run["dram_bytes_measured"] == 1e7 and run["ncu_kernels_per_iter"] == 2
    assert run["dram_bytes_steady_min"] == run["dram_bytes_steady_max"] == 1e7 and run["steady_iterations"] == 2
    assert run["iteration_dram_bytes_measured"] == 4.0 and run["iteration_ncu_time_us"] == 2.0


def test_the_bytes_are_one_pass_metrics_and_the_rest_a_second_set():
    assert ncu_report.BYTE_METRICS == ncu_report.RANGE_METRICS == [
        "gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_bytes.sum"]
    assert "gpu__time_duration.sum" in ncu_report.KERNEL_METRICS
    assert set(ncu_report.BYTE_METRICS) | set(ncu_report.KERNEL_METRICS) | {"device__attribute_l2_cache_size"} \
        == set(ncu_report.METRICS)
    log = json.load(open(os.path.join(FIXTURE, "oracles.json")))["small"]["log_tail"]
    assert ncu_report.passes(log) == 10 and ncu_report.passes("") is None


def _ncu_copying(tmp_path, report):
    """An ncu stand-in that writes the recorded report where -o says and logs ncu's pass
    count of the metric set it was given (1 for the byte metrics, 10 for the others)."""
    return _fake_ncu(tmp_path, f"""[ "$1" = "--query-metrics" ] && exit 0   # lists no metric: optional ones left out
out=""; prev=""; metrics=""
for a in "$@"; do
  [ "$prev" = "-o" ] && out="$a"
  [ "$prev" = "--metrics" ] && metrics="$a"
  prev="$a"
done
case "$metrics" in *sm__throughput*) n="10 passes";; *) n="1 pass";; esac
echo "==PROF== Profiling \"vectorized_elementwise_kernel\" - 0: 0%....50%....100% - $n"
cp {report} "$out.ncu-rep"
""")


@needs_module
def test_the_step_profiles_steady_then_cold_then_roofline_then_the_range(tmp_path):
    d = tmp_path / "r0"
    d.mkdir()
    (d / "timing.json").write_text(json.dumps({"status": "ok"}))
    ncu = _ncu_copying(tmp_path, _report("oracle", tmp_path))
    subprocess.run([sys.executable, PROFILE, "--run-dir", str(d), "--ncu", ncu, "--iters", "4",
                    "--passes", "range,roofline,cold", "--", "python"],
                   env={**os.environ, "PYTHONPATH": ROOT}, check=True)
    rec = json.loads((d / "ncu.json").read_text())
    assert rec["status"] == "ok" and rec["passes"] == ["steady", "cold", "roofline", "range"]
    assert [(rec[k]["report"], rec[k]["passes"], rec[k]["status"]) for k in rec["passes"]] == [
        ("ncu_steady.ncu-rep", 1, "ok"), ("ncu_cold.ncu-rep", 1, "ok"), ("ncu.ncu-rep", 10, "ok"),
        ("ncu_range.ncu-rep", 1, "ok")]
    assert f"--metrics {','.join(ncu_report.BYTE_METRICS)} " in rec["steady"]["command"]
    assert "--replay-mode range" in rec["range"]["command"]
    row, kernels = run_traffic.compute(str(d / "ncu.json"))
    raw = _raw("oracle")
    assert row["ncu_status"] == "ok" and row["bytes_replay"] == "one pass" and row["ncu_note"] is None
    assert "bytes_replay one pass" in row["ncu_settings"]
    assert kernels.loc[0, "dram_read_bytes"] == pytest.approx(sum(r["dram_read_bytes"] for r in raw) / 4)
    # the roofline pass's report read as one iteration: its 4 launches' flops
    assert kernels["achieved_occupancy_pct"].notna().all() and row["flops_measured"] == sum(r["flops"] for r in raw)
    assert row["iteration_dram_bytes_measured"] is not None


@needs_module
def test_kernels_in_one_pass_and_not_the_other_keep_the_bytes_and_say_so(tmp_path):
    """The steady report's kernel against a roofline report whose results are 4 ranges."""
    d = tmp_path
    shutil.copy(_report("oracle", tmp_path), d / "ncu_steady.ncu-rep")
    shutil.copy(_report("oracle_range", tmp_path), d / "ncu.ncu-rep")
    ok = {"status": "ok", "reason": None}
    (d / "ncu.json").write_text(json.dumps({
        "status": "ok", "settings": {"iterations": 4}, "range": None,
        "steady": {**ok, "report": "ncu_steady.ncu-rep", "passes": 1, "iterations": 4},
        "roofline": {**ok, "report": "ncu.ncu-rep", "iterations": 1}}))
    row, kernels = run_traffic.compute(str(d / "ncu.json"))
    assert row["ncu_status"] == "ok" and row["dram_bytes_measured"] > 0
    assert "are in one pass and not the other" in row["ncu_note"]
    assert kernels["achieved_occupancy_pct"].isna().all() and row["flops_measured"] is None


@needs_module
def test_a_folder_with_only_the_multi_pass_report_still_reads(tmp_path):
    """A run folder whose ncu.json has no bytes record: the bytes come from ncu.ncu-rep, and
    the note and settings say they are those of a multi-pass kernel replay."""
    d = tmp_path
    shutil.copy(_report("oracle", tmp_path), d / "ncu.ncu-rep")
    (d / "ncu.log").write_text(json.load(open(os.path.join(FIXTURE, "oracles.json")))["small"]["log_tail"])
    (d / "ncu.json").write_text(json.dumps({
        "status": "ok", "reason": None, "settings": {"replay": "kernel", "iterations": 4}, "range": None,
        "kernel": {"status": "ok", "reason": None, "report": "ncu.ncu-rep"}}))
    row, kernels = run_traffic.compute(str(d / "ncu.json"))
    raw = _raw("oracle")
    assert row["ncu_status"] == "ok" and row["bytes_replay"] == "kernel replay, 10 passes"
    assert "multi-pass report (kernel replay, 10 passes)" in row["ncu_note"]
    assert "bytes_replay kernel replay, 10 passes" in row["ncu_settings"]
    # the median over the 4 iterations (one launch each), the flops their mean
    assert sorted(r["dram_write_bytes"] for r in raw)[1:3] == [39168, 46848]
    assert row["dram_write_bytes_measured"] == (39168 + 46848) / 2
    assert row["flops_measured"] == pytest.approx(sum(r["flops"] for r in raw) / 4)


def _runs():
    keys = dict(batch=1024, size="default", mode="inference", dtype="float32", backend="nsys", device="cuda")
    return pd.DataFrame([{**keys, "model": "pointwise_heavy", "variant": v, "repeat": 0, "status": "ok",
                          "bytes_fused": 32e6, "bytes_unfused": 1e9, "flops": 0.0, "flops_pointwise": 1e8}
                         for v in ("eager", "compile")])


def _traffic_dir(tmp_path, variant, dram):
    d = tmp_path / variant
    d.mkdir()
    keys = {**_runs().iloc[0].to_dict(), "variant": variant}
    (d / "metrics.json").write_text(json.dumps({k: keys[k] for k in traffic.CONFIG}))
    (d / run_traffic.RUN_FILE).write_text(json.dumps({"dram_bytes_measured": dram, "l2_bytes_measured": 2 * dram,
                                                      "flops_measured": 1e8, "ncu_status": "ok"}))
    pd.DataFrame([{"full_name": "k", "name": "k", "ncu_time_us": 10.0, "dram_bytes": dram}]).to_csv(
        d / run_traffic.KERNEL_FILE, index=False)
    return str(d / "metrics.json")


def test_tables_carry_measured_bytes_beside_the_model(tmp_path):
    files = traffic.traffic_files([_traffic_dir(tmp_path, "eager", 5e8), _traffic_dir(tmp_path, "compile", 2e7)])
    runs = traffic.add_to_runs(_runs(), files)
    c = runs.set_index("variant").loc["compile"]
    assert c["bytes_source"] == "measured" and c["dram_over_fused"] == pytest.approx(2e7 / 32e6)
    assert c["flops_measured_over_model"] == pytest.approx(1.0)
    with_copy = traffic.add_to_runs(_runs().assign(copy_bandwidth_frac=0.5), files).set_index("variant")
    assert with_copy.loc["compile", "copy_bandwidth_frac_measured"] == pytest.approx(0.5 * 2e7 / 32e6)
    sp = traffic.add_to_speedups(pd.DataFrame([{**r, "status": "ok"} for r in runs[traffic.CONFIG].to_dict("records")]),
                                 runs)
    s = sp.set_index("variant").loc["compile"]
    assert s["bytes_removed_measured"] == pytest.approx(5e8 - 2e7)
    assert s["bytes_removed_model"] == pytest.approx(1e9 - 32e6)
    kernels = pd.DataFrame([{**r, "full_name": "k", "name": "k", "time_per_iter_us": 8.0}
                            for r in runs[traffic.CONFIG].to_dict("records")])
    k = traffic.add_to_kernels(kernels, files)
    assert k["ncu_over_nsys_time"].tolist() == [1.25, 1.25]
    # the decomposition's memory term takes the measured bytes where both sides have them
    e, v = (decompose.side(runs[runs["variant"] == x]) for x in ("eager", "compile"))
    assert decompose.saved_bytes(e, v) == (pytest.approx(4.8e8), "measured")


def test_a_configuration_whose_step_did_not_run_says_so(tmp_path):
    files = traffic.traffic_files([_traffic_dir(tmp_path, "eager", 5e8)])
    runs = traffic.add_to_runs(_runs(), files).set_index("variant")
    assert runs.loc["eager", "ncu_status"] == "ok"
    assert runs.loc["compile", "ncu_status"] == "not run" and runs.loc["compile", "ncu_note"] == traffic.NOT_RUN
    assert runs.loc["compile", "bytes_source"] == "model"
    from fusionlab.analysis.report.traffic_text import traffic_md
    sp = pd.DataFrame([{"model": "mlp", "variant": v, "batch": 8, "size": "default", "bytes_removed_model": 1.0,
                        "bytes_removed_measured": 0.0 if v == "eager" else None} for v in ("eager", "compile")])
    text = "\n".join(traffic_md(runs.reset_index(), sp))
    assert "no variant has measured bytes beside eager's" in text and "| bytes_removed_measured" not in text


def test_without_measured_bytes_the_columns_are_empty_and_say_why():
    runs = traffic.add_to_runs(_runs(), [], note="turned off (config key ncu.enabled: false)")
    assert runs["dram_bytes_measured"].isna().all() and (runs["bytes_source"] == "model").all()
    assert set(runs["ncu_note"]) == {"turned off (config key ncu.enabled: false)"}
    from fusionlab.analysis.report.traffic_text import traffic_md
    text = "\n".join(traffic_md(runs, pd.DataFrame()))
    assert "No measured bytes: turned off" in text


def test_table_8_1_counts_the_mlp_memory_accesses():
    runs = pd.DataFrame([{"model": "mlp_small", "variant": "eager", "batch": 128, "size": "default",
                          "dtype": "float32", "mode": "inference", "dram_read_bytes_measured": 1.0,
                          "dram_write_bytes_measured": 1.0, "l2_bytes_measured": 3.0,
                          "iteration_dram_bytes_measured": 2.0, "bytes_unfused": 5.0, "ncu_note": None}])
    t = traffic.memory_access_table(runs).iloc[0]
    b, f, h = 128, 1, 64
    assert t["table_reads_bytes"] == 4 * (b * f + f * h + 3 * b * h + 2 * h + 2 * b)
    assert t["table_writes_bytes"] == 4 * (2 * b * h + 2 * b)


def _fake_ncu(tmp_path, body):
    p = tmp_path / "ncu"
    p.write_text(f"#!/bin/sh\n{body}\n")
    p.chmod(0o755)
    return str(p)


@pytest.mark.parametrize("body,status", [("echo ncu failed; exit 3", "failed"), ("sleep 30", "timeout")])
def test_a_failing_or_timed_out_step_is_recorded_and_exits_0(tmp_path, body, status):
    d = tmp_path / "r0"
    d.mkdir()
    (d / "timing.json").write_text(json.dumps({"status": "ok"}))
    rc = subprocess.run([sys.executable, PROFILE, "--run-dir", str(d), "--ncu", _fake_ncu(tmp_path, body),
                         "--passes", "steady,cold", "--timeout", "2", "--", sys.executable, "-m", "fusionlab.runner"],
                        env={**os.environ, "PYTHONPATH": ROOT}).returncode
    rec = json.loads((d / "ncu.json").read_text())
    assert rc == 0 and rec["status"] == status and rec["cold"] is None
    assert "--cache-control none --clock-control none" in rec["steady"]["command"]
    assert "--nvtx-include fusionlab@measure/" in rec["steady"]["command"]
    row, kernels = run_traffic.compute(str(d / "ncu.json"))
    assert row["ncu_status"] == status and row["dram_bytes_measured"] is None and kernels.empty
    assert status in row["ncu_note"]


def test_the_runner_under_ncu_takes_the_counters_lock_and_compiles_in_process(tmp_path):
    d = tmp_path / "r0"
    d.mkdir()
    (d / "timing.json").write_text(json.dumps({"status": "ok"}))
    env_file = tmp_path / "env.txt"
    ncu = _fake_ncu(tmp_path, f'echo "$FUSIONLAB_COUNTERS_LOCK $TORCHINDUCTOR_COMPILE_THREADS" > {env_file}; exit 3')
    subprocess.run([sys.executable, PROFILE, "--run-dir", str(d), "--ncu", ncu, "--", "python"],
                   env={**os.environ, "PYTHONPATH": ROOT}, check=True)
    assert env_file.read_text().split() == ["1", "1"]
    rec = json.loads((d / "ncu.json").read_text())
    assert "--target-processes application-only" in rec["steady"]["command"]


@needs_module
def test_a_run_folder_copied_without_its_reports_is_known(tmp_path):
    """Results copied without their .ncu-rep files: regenerating keeps their traffic files
    (workflow/rules/common.smk TRAFFIC_KEPT); read again, the note names the missing report."""
    ok = {"status": "ok", "reason": None}
    (tmp_path / "ncu.json").write_text(json.dumps({
        "status": "ok", "settings": {"replay": "kernel", "iterations": 4}, "range": None, "kernel": None,
        "bytes": {**ok, "report": "ncu_bytes.ncu-rep", "passes": 1}}))
    assert run_traffic.reports_missing(str(tmp_path)) and run_traffic.traffic_lost(str(tmp_path))
    (tmp_path / run_traffic.RUN_FILE).write_text("{}")
    assert not run_traffic.traffic_lost(str(tmp_path))   # kept: used as it is
    (tmp_path / run_traffic.RUN_FILE).unlink()
    row, _ = run_traffic.compute(str(tmp_path / "ncu.json"))
    assert row["ncu_status"] == "unreadable" and "ncu_bytes.ncu-rep is not in the run folder" in row["ncu_note"]
    shutil.copy(_report("oracle", tmp_path), tmp_path / "ncu_bytes.ncu-rep")
    assert not run_traffic.reports_missing(str(tmp_path))
    (tmp_path / "ncu.json").write_text(json.dumps({"status": "failed", "reason": "x"}))
    assert not run_traffic.reports_missing(str(tmp_path))


def test_a_run_that_failed_untraced_is_not_profiled(tmp_path):
    (tmp_path / "timing.json").write_text(json.dumps({"status": "oom"}))
    subprocess.run([sys.executable, PROFILE, "--run-dir", str(tmp_path), "--ncu", "/nonexistent/ncu", "--",
                    "python"], env={**os.environ, "PYTHONPATH": ROOT}, check=True)
    assert json.loads((tmp_path / "ncu.json").read_text())["status"] == "skipped"


def test_config_switch():
    cfg = sweep.validate({"models": ["mlp"], "variants": ["eager"], "batch_sizes": [8]})
    assert cfg["ncu"] == {"enabled": "auto", "passes": ["steady"], "iters": 3, "warmup_iters": 5,
                          "timeout_s": 900, "top_kernels": 0, "top_share": 0}
    assert sweep.validate({"models": ["mlp"], "variants": ["eager"], "batch_sizes": [8],
                           "ncu": {"enabled": False}})["ncu"]["enabled"] is False
    with pytest.raises(sweep.ConfigError, match="ncu.enabled"):
        sweep.validate({"models": ["mlp"], "variants": ["eager"], "batch_sizes": [8], "ncu": {"enabled": "yes"}})


def test_the_cost_benchmark_stops_a_sweep_with_every_job_it_started(tmp_path):
    """benchmarks/ncu_cost.py past its timeout: the sweep's jobs (here a shell's background
    child) end with it, so none runs on beside the next sweep."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
    try:
        import ncu_cost
    finally:
        sys.path.pop(0)
    pidfile = tmp_path / "child.pid"
    proc = subprocess.Popen(["bash", "-c", f"sleep 300 & echo $! > {pidfile}; wait"], start_new_session=True)
    for _ in range(100):
        if pidfile.exists() and pidfile.read_text().strip():
            break
        time.sleep(0.05)
    child = int(pidfile.read_text())
    ncu_cost.stop_group(proc, grace=5)
    assert proc.poll() is not None
    time.sleep(0.2)
    assert not alive(child)


def alive(pid: int) -> bool:
    """A process that has not ended (a zombie, ended and not yet reaped, has)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
