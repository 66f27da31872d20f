"""The workflow end to end on the CPU smoke config, as a user runs it, with faults
injected: a sweep killed mid-run and resumed with the same command, a second sweep on the
same results refused, an OOM and a raising experiment, a corrupt profile.

The smoke sweep runs once per session (fixture `smoke`, shared by the xdist workers); the
tests that read it come last (tests/conftest.py) and change only copies of it."""
import fcntl
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from types import SimpleNamespace

import pandas as pd
import pytest
import yaml

from conftest import ROOT

SNAKE = [sys.executable, "-m", "snakemake"]


def snake(*args, env=None, check=True, timeout=900):
    p = subprocess.run(SNAKE + list(args), cwd=ROOT, capture_output=True, text=True,
                       env={**os.environ, **(env or {})}, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(p.stdout[-3000:] + p.stderr[-3000:])
    return p


@pytest.mark.slow
def test_lint_clean():
    p = snake("--lint", check=False)
    assert p.returncode == 0, p.stdout + p.stderr


# (each kind of bad value and its message: tests/test_config.py, without Snakemake)
@pytest.mark.slow
@pytest.mark.parametrize("override, words", [
    ({"models": ["resnet"]}, ["models[0]", "'resnet'", "allowed values", "mlp"]),
    ({"variants": ["eager; rm -rf ~"]}, ["variants[0]", "allowed values"]),
])
def test_bad_config_stops_before_running(tmp_path, override, words):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(yaml.safe_dump({"models": ["mlp"], "variants": ["eager"], "batch_sizes": [8], **override,
                                   "results": f"{tmp_path}/r"}))
    p = snake("-n", "--configfile", str(cfg), check=False)
    assert p.returncode != 0
    out = p.stdout + p.stderr
    for w in words:
        assert w in out, (w, out[-2000:])
    assert not (tmp_path / "r").exists()


SMOKE = ["all", "--cores", "2", "--configfile", "config/smoke.yaml"]
FAULTS = {"FUSIONLAB_INJECT_FAULT": "mlp:compile:32=oom,pointwise_heavy:eager:8=error"}
# the run in flight when the sweep is killed: it hangs in its check step until then, so
# the kill always lands in the middle of it (the rerun has no such fault)
HANG = "matmul_heavy:eager:32"
HUNG = "runs/torch/matmul_heavy/eager/inference_float32/bs32-dim1024/r0"   # its run folder


def in_flight(res):
    """Run folders whose runner has started (run.json is written first) but not ended."""
    return sorted(os.path.dirname(p) for p in glob.glob(f"{res}/runs/**/run.json", recursive=True)
                  if not os.path.exists(os.path.join(os.path.dirname(p), "trace.json")))


def killed_and_resumed(res):
    """The smoke sweep killed while a run is in flight, then the same command again."""
    cmd = [*SMOKE, "--config", f"results={res}"]
    hang = {"FUSIONLAB_INJECT_FAULT": FAULTS["FUSIONLAB_INJECT_FAULT"] + f",{HANG}=hang"}
    os.makedirs(os.path.dirname(res), exist_ok=True)
    with open(f"{res}-killed.log", "w") as log:
        proc = subprocess.Popen(SNAKE + cmd, cwd=ROOT, env={**os.environ, **hang},
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        hung = f"{res}/{HUNG}"
        deadline = time.time() + 600
        while time.time() < deadline and proc.poll() is None and hung not in in_flight(res):
            time.sleep(0.2)
        try:
            assert hung in in_flight(res), open(f"{res}-killed.log").read()[-3000:]
            # a second sweep on the same results folder while the first is alive: refused
            second = snake(*cmd, env=FAULTS, check=False)
            finished = {p: os.path.getmtime(p) for p in glob.glob(f"{res}/runs/**/trace.json", recursive=True)}
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    killed = in_flight(res)
    # the same command again: no --unlock, no --rerun-incomplete
    resumed = snake(*cmd, env=FAULTS)
    out = lambda p: {"returncode": p.returncode, "stdout": p.stdout, "stderr": p.stderr}   # noqa: E731
    return {"res": res, "pid": proc.pid, "second": out(second), "finished": finished, "killed": killed,
            "resumed": out(resumed)}


@pytest.fixture(scope="session")
def smoke(tmp_path_factory):
    """The CPU smoke sweep as a user runs it, with faults injected: killed (SIGKILL to its
    process group) while a run is in flight, then the same command again. It runs once per
    session, shared by the xdist workers (the first to need it runs it, under a lock; the
    tests that read it come last in the session, so it is ready by then). Its results
    folder is read only: a test that changes it works on a copy."""
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent          # this session's folder, one for all its workers
    with open(shared / "smoke.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = shared / "smoke.json"
        if not done.exists():
            try:
                rec = killed_and_resumed(str(shared / "smoke" / "results"))
            except BaseException as e:
                done.write_text(json.dumps({"error": f"{type(e).__name__}: {e}"[-5000:]}))
                raise
            done.write_text(json.dumps(rec))
        rec = json.loads(done.read_text())
    if "error" in rec:
        pytest.fail(f"the smoke sweep failed (in the worker that ran it): {rec['error']}")
    rec["second"], rec["resumed"] = SimpleNamespace(**rec["second"]), SimpleNamespace(**rec["resumed"])
    return SimpleNamespace(**rec, runs=pd.read_csv(f"{rec['res']}/tables/runs.csv"))


def copy_of(smoke, path, **kw):
    shutil.copytree(smoke.res, path, **kw)
    return str(path)


@pytest.mark.slow
def test_killed_sweep_resumes_with_the_same_command(smoke):
    res = smoke.res
    # the second sweep stopped before running anything, naming the live one
    out = smoke.second.stdout + smoke.second.stderr
    assert smoke.second.returncode != 0
    assert f"another sweep is running on {res} (pid {smoke.pid} " in out, out[-3000:]
    # the kill landed in the middle of a run: its record says it died, its profile is missing
    hung = f"{res}/{HUNG}"
    assert hung in smoke.killed and smoke.finished     # and some runs had finished before
    # the rerun did the unfinished runs and kept the finished ones (not run again)
    assert {p: os.path.getmtime(p) for p in smoke.finished} == smoke.finished
    runs = smoke.runs
    assert len(runs) == 16 and not in_flight(res)
    row = runs[(runs.model == "matmul_heavy") & (runs.variant == "eager") & (runs.batch == 32)].iloc[0]
    assert row.status == "ok"
    for word in ("--unlock", "IncompleteFilesException", "LockException", "Directory cannot be locked"):
        assert word not in smoke.resumed.stdout + smoke.resumed.stderr
    assert "Using workflow specific profile profiles/default" in smoke.resumed.stderr
    assert open(f"{res}/.sweep.lock").read() == ""      # let go at the end
    assert not [f for _, _, fs in os.walk(res) for f in fs if ".tmp" in f]


@pytest.mark.slow
@pytest.mark.smoke_reader
def test_smoke_sweep_records_every_run(smoke):
    res, runs = smoke.res, smoke.runs
    assert len(runs) == 3 * 2 * 2 + 2 * 2      # mlp also at hidden 256: a size axis (sizes:)
    st = {(r.model, r.variant, r.batch, r.size): r.status for r in runs.itertuples()}
    assert st.pop(("mlp", "compile", 32, "default")) == "oom"
    assert st.pop(("mlp", "compile", 32, "hidden256")) == "oom"
    assert st.pop(("pointwise_heavy", "eager", 8, "default")) == "error"
    assert set(st.values()) == {"ok"}
    mlp = runs[runs.model == "mlp"]
    assert sorted(set(zip(mlp["size"], mlp["hidden"]))) == [("default", 1024), ("hidden256", 256)]
    assert os.path.exists(f"{res}/runs/torch/mlp/eager/inference_float32/bs8-hidden256/r0/run.json")
    small = mlp[(mlp["size"] == "hidden256") & (mlp.status == "ok")]
    assert (small["flops"] < mlp.loc[(mlp["size"] == "default") & (mlp.status == "ok"), "flops"].min()).all()
    assert (runs["backend"] == "torch").all() and (runs["device"] == "cpu").all()
    ok = runs[runs.status == "ok"]
    assert ok["wall_time_per_iter_ms"].gt(0).all() and ok["kernels_per_iter"].gt(0).all()
    # wall time from the untraced windows, the traced range beside it, and their ratio
    assert (ok["wall_time_per_iter_ms"] == ok["untraced_wall_time_per_iter_ms"]).all()
    assert ok["traced_wall_time_per_iter_ms"].gt(0).all()
    assert ((ok["profiler_overhead"] - ok["traced_wall_time_per_iter_ms"] / ok["wall_time_per_iter_ms"]).abs()
            < 1e-12).all()
    assert (ok["attribution"] == "process").all()
    pw = ok[(ok.model == "pointwise_heavy")].set_index(["variant", "batch"])["kernels_per_iter"]
    assert pw[("eager", 32)] == 35 and pw[("compile", 32)] == 1
    sp = pd.read_csv(f"{res}/tables/speedups.csv")
    assert sp.loc[sp.status == "ok", "profiler_overhead"].gt(0).all()
    # paired_eager (on by default): eager timed beside each variant, in its process
    assert ok.loc[ok.variant == "compile", "paired_speedup"].gt(0).all()
    assert ok.loc[ok.variant == "eager", "paired_speedup"].isna().all()
    paired = sp[(sp.status == "ok") & (sp.variant == "compile")]
    assert paired["speedup_paired"].gt(0).all()
    eager = sp[(sp.variant == "eager") & (sp.status == "ok")].set_index(["model", "batch", "size"])["speedup_paired"]
    keys = [k for k in zip(paired["model"], paired["batch"], paired["size"]) if k in eager.index]
    assert len(keys) == 5 and (eager.loc[keys] == 1).all()   # 1 where its variant paired
    assert eager.drop(keys).isna().all() and len(eager.drop(keys)) == 2    # compile ran out of memory
    bad = sp[(sp.model == "mlp") & (sp.variant == "compile") & (sp.batch == 32) & (sp["size"] == "default")].iloc[0]
    assert bad.status == "oom" and pd.isna(bad.speedup_wall)
    long = pd.read_parquet(f"{res}/tables/metrics_long.parquet")
    assert {"metric", "value", "status"} <= set(long.columns)
    check_analysis_outputs(res)


@pytest.mark.slow
@pytest.mark.smoke_reader
def test_corrupt_profile_is_a_row_with_its_reason(smoke, tmp_path):
    """One-line reason in the table, the other runs still analysed (on a copy of the sweep)."""
    res = copy_of(smoke, tmp_path / "results")
    d = f"{res}/runs/torch/mlp/eager/inference_float32/bs8/r0"
    with open(f"{d}/trace.json", "w") as f:
        f.write('{"traceEvents": [trunc')
    for out in ("metrics.json", "kernels.csv"):   # the run analysed again from its corrupted profile
        os.remove(f"{d}/{out}")
    # its runs table made again (figures with error rows: the smoke sweep's own)
    p = snake(f"{res}/tables/runs.csv", *SMOKE[1:], "--config", f"results={res}", env=FAULTS)
    assert "rule profile_torch" not in p.stdout + p.stderr      # nothing profiled again
    assert "rule run_metrics" in p.stdout + p.stderr
    runs = pd.read_csv(f"{res}/tables/runs.csv")
    row = runs[(runs.model == "mlp") & (runs.variant == "eager") & (runs.batch == 8) & (runs["size"] == "default")].iloc[0]
    assert row.status == "error" and "trace.json: not a torch.profiler Chrome trace" in row.reason
    assert (runs.status == "ok").sum() == 12


@pytest.mark.slow
@pytest.mark.smoke_reader
def test_regenerate_from_the_recorded_profiles(smoke, tmp_path):
    """Figures, tables and summary again from the recorded profiles alone (no profiling),
    then Snakemake's HTML report (on a copy of the sweep)."""
    res = copy_of(smoke, tmp_path / "results")
    d = f"{res}/runs/torch/mlp/eager/inference_float32/bs8/r0"
    before = {p: os.path.getmtime(p) for p in (f"{d}/trace.json", f"{d}/run.json")}
    p = snake("regenerate", "--cores", "2", "--forceall", "--configfile", "config/smoke.yaml",
              "--config", f"results={res}", "regenerate=1")
    assert "regenerating from 16 recorded torch runs" in p.stderr
    assert "profile_torch" not in p.stdout + p.stderr
    assert {p: os.path.getmtime(p) for p in before} == before
    pd.testing.assert_frame_equal(pd.read_csv(f"{res}/tables/runs.csv"), smoke.runs)
    # the same bytes as the sweep wrote: every table (rows in config order) and the summary
    for name in sorted(os.listdir(f"{smoke.res}/tables")) + ["../summary.md", "../figures/fusion_map.html"]:
        with open(f"{smoke.res}/tables/{name}", "rb") as a, open(f"{res}/tables/{name}", "rb") as b:
            assert a.read() == b.read(), name
    check_analysis_outputs(res)
    # a caption file planted in the results folder is never templated: the report withholds it
    planted = f"{res}/figures/headline/mlp.rst"
    with open(planted, "w") as f:
        f.write("{{ cycler.__init__.__globals__.os.system('touch " + f"{res}/pwned" + "') }}\n")
    snake("--report", f"{res}/report.html", "--configfile", "config/smoke.yaml", "--config", f"results={res}")
    assert os.path.getsize(f"{res}/report.html") > 100_000
    assert not os.path.exists(f"{res}/pwned")


@pytest.mark.slow
@pytest.mark.smoke_reader
def test_regenerate_from_results_copied_without_profiles(smoke, tmp_path):
    """metrics.json kept as it is; the same tables and summary (the figures come from
    the tables: test_regenerate_from_the_recorded_profiles makes them again)."""
    copy = copy_of(smoke, tmp_path / "copied",
                   ignore=shutil.ignore_patterns("trace.json", "figures", "tables", "summary.md"))
    metrics = {p: open(p).read() for p in glob.glob(f"{copy}/runs/**/metrics.json", recursive=True)}
    assert len(metrics) == 16
    p = snake(f"{copy}/tables/runs.csv", f"{copy}/summary.md", "--cores", "2", "--forceall",
              "--configfile", "config/smoke.yaml", "--config", f"results={copy}", "regenerate=1")
    assert "16 without their profile (not copied): every run's metrics.json is used as it is" in p.stderr
    assert "run_metrics" not in p.stdout + p.stderr
    assert {p: open(p).read() for p in metrics} == metrics
    pd.testing.assert_frame_equal(pd.read_csv(f"{copy}/tables/runs.csv"), smoke.runs)
    assert open(f"{copy}/summary.md").read() == open(f"{smoke.res}/summary.md").read()


@pytest.mark.slow
@pytest.mark.smoke_reader
def test_a_configuration_with_no_run_is_a_not_run_row_of_the_runs_own_device(smoke, tmp_path):
    """A regenerate of the sweep less every repeat of mlp's compile at hidden 256, batch 32
    (a sweep stopped before it): headline.csv has it as a row of status 'not run' with the
    recorded runs' backend, device and size values (not the regenerating machine's), and the
    summary lists it."""
    gone = "runs/torch/mlp/compile/inference_float32/bs32-hidden256"
    copy = copy_of(smoke, tmp_path / "copied", ignore=shutil.ignore_patterns("figures", "tables", "summary.md"))
    assert os.path.isdir(f"{copy}/{gone}")
    shutil.rmtree(f"{copy}/{gone}")
    snake(f"{copy}/summary.md", "--cores", "2", "--configfile", "config/smoke.yaml",
          "--config", f"results={copy}", "regenerate=1")
    h = pd.read_csv(f"{copy}/tables/headline.csv")
    row = h[h["status"] == "not run"]
    assert row[["model", "variant", "batch", "size"]].values.tolist() == [["mlp", "compile", 32, "hidden256"]]
    assert (row["backend"].iloc[0], row["device"].iloc[0], row["hidden"].iloc[0]) == ("torch", "cpu", 256)
    assert h[["backend", "device"]].nunique().tolist() == [1, 1]
    assert "- mlp compile, inference float32, batch 32, hidden256\n" in open(f"{copy}/summary.md").read()


@pytest.mark.slow
@pytest.mark.smoke_reader
def test_more_repeats_on_records_copied_without_profiles(smoke, tmp_path):
    """Records unpacked into a results folder (no trace.json, no Snakemake metadata for
    their paths) and a larger `repeats`: the sweep plans the new repeats only."""
    copy = copy_of(smoke, tmp_path / "copied",
                   ignore=shutil.ignore_patterns("trace.json", "figures", "tables", "summary.md"))
    p = snake("all", "-n", "--cores", "2", "--configfile", "config/smoke.yaml", "--config", f"results={copy}",
              "repeats=2")
    planned = re.findall(r"rule (profile_torch|run_metrics|record_unsupported):\n(?:.*\n)*?\s+wildcards: .*repeat=(\d+)",
                         p.stdout)
    assert planned and {r for _, r in planned} == {"1"}, p.stdout[-3000:]
    runs = len(glob.glob(f"{copy}/runs/**/r0", recursive=True))
    assert sum(rule == "profile_torch" for rule, _ in planned) + \
        sum(rule == "record_unsupported" for rule, _ in planned) == runs


def check_analysis_outputs(res):
    from fusionlab.analysis.report import figures
    # the figures a CPU sweep has data for, each drawn (no GPU: no idle breakdown, launch
    # overhead or over-fusion; 2 values per axis: no scaling law)
    drawn = {"headline", "speedup_vs_batch", "speedup_breakdown", "kernels_per_iter", "kernel_durations",
             "roofline", "crossover", "compile_cost", "profiler_overhead", "suite", "gap_waterfall",
             "attribution_icicle"}
    assert set(os.listdir(f"{res}/figures")) == drawn | {"fusion_map.html"}
    for fig in drawn:
        for s in (["mlp", "matmul_heavy", "pointwise_heavy"] if figures.FIGURES[fig][0] == "model" else ["all"]):
            assert os.path.getsize(f"{res}/figures/{fig}/{s}.png") > 20_000, (fig, s)   # not a marker
            assert "no data:" not in open(f"{res}/figures/{fig}/{s}.svg").read(), (fig, s)   # text kept as text
            assert "No data" not in open(f"{res}/figures/{fig}/{s}.rst").read(), (fig, s)
    assert os.path.getsize(f"{res}/summary.html") > 5000 and os.path.exists(f"{res}/tables/headline.csv")
    summary = open(f"{res}/summary.md").read()
    assert "## Speedup over eager (wall time)" in summary
    speedups = summary.split("## Speedup over eager (wall time)", 1)[1].split("\n## ", 1)[0]
    mlp = speedups.split("### mlp", 1)[1].split("###", 1)[0]
    assert ("| variant | default, batch 8 | default, batch 32 | hidden256, batch 8 | hidden256, batch 32 |" in mlp
            and "| oom |" in mlp)      # the oom run is listed
    assert "## Where the speedup comes from" in summary
    bd = pd.read_csv(f"{res}/tables/speedup_breakdown.csv")
    for _, g in bd.groupby(["model", "batch", "size", "variant"]):    # the parts add up to the total
        parts = g[g.part != "total"].saved_ms.sum()
        assert abs(parts - g[g.part == "total"].saved_ms.item()) < 1e-9
    assert "## Crossover: where a variant starts and stops beating eager" in summary
    from fusionlab.analysis.sweep import scaling     # smoke sweeps no axis with 3 values: header only
    assert list(pd.read_csv(f"{res}/tables/scaling.csv").columns) == scaling.COLUMNS
    assert "ties" in pd.read_csv(f"{res}/tables/crossover.csv").columns
    from fusionlab.analysis.sweep import overfusion     # the CPU backend records no GPU launch resources
    kr = pd.read_csv(f"{res}/tables/kernel_resources.csv")
    assert list(kr.columns) == overfusion.COLUMNS and kr.empty
    assert "## Over-fusion signs" in summary and "No GPU kernel data" in summary
    fm = open(f"{res}/figures/fusion_map.html").read()
    assert "cpp_fused" in fm and "aten::sin" in fm
    k = pd.read_csv(f"{res}/tables/kernels.csv")
    fused = k[(k.model == "pointwise_heavy") & (k.variant == "compile")]
    assert set(fused["kind"]) == {"cpp"} and fused["n_ops"].max() >= 9
    cross = pd.read_csv(f"{res}/tables/crossover.csv")
    assert set(cross["model"]) == {"mlp", "matmul_heavy", "pointwise_heavy"}
    assert set(cross.loc[cross.model == "mlp", "axis"]) == {"batch", "hidden"}    # along any swept axis
    assert set(cross.loc[(cross.model == "mlp") & (cross.axis == "hidden"), "fixed"]) == {"batch=8", "batch=32"}
    runs = pd.read_csv(f"{res}/tables/runs.csv")
    assert runs["bytes_fused"].gt(0).all() and runs.loc[runs.model == "mlp", "flops"].gt(0).all()
    assert runs.loc[runs.status == "ok", "copy_bandwidth_frac"].gt(0).all()


@pytest.mark.slow
def test_unsupported_pairs_recorded_without_profiling(tmp_path):
    """A pair the device cannot run (cuda_graph on a CPU) is a row with its reason, no
    profiler runs for it, the summary and every figure are made with it, and regenerating
    keeps it."""
    res = tmp_path / "results"
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"models": ["mlp_small"], "variants": ["eager", "cuda_graph", "nn_linear"],
                                   "batch_sizes": "default", "warmup_iters": 1, "measure_iters": 2,
                                   "repeats": 1, "device": "cpu", "results": str(res)}))
    snake(str(res / "summary.md"), str(res / "figures" / "fusion_map.html"), "--cores", "2", "--configfile", str(cfg))
    runs = pd.read_csv(res / "tables" / "runs.csv").set_index("variant")
    assert list(runs["batch"]) == [128] * 3                     # the model's default batch
    assert runs.loc["cuda_graph", "status"] == "unsupported"
    assert "needs device cuda" in runs.loc["cuda_graph", "reason"]
    assert runs.loc["nn_linear", "status"] == "ok" and runs.loc["eager", "status"] == "ok"
    d = res / "runs" / "torch" / "mlp_small" / "cuda_graph" / "inference_float32" / "bs128" / "r0"
    assert (d / "unsupported.json").exists() and not (d / "trace.json").exists()
    assert "## Not run: unsupported pairs\n\n- **cuda_graph**: needs device cuda" in (res / "summary.md").read_text()
    # the figures this sweep has data for (each drawn from such tables: tests/test_figures.py;
    # every planned figure of the smoke sweep drawn and checked: check_analysis_outputs)
    from fusionlab.analysis.report import figures
    plan = figures.plan([{"model": "mlp_small", "variant": v, "batch": 128, "skipped": v == "cuda_graph"}
                         for v in ("eager", "cuda_graph", "nn_linear")], "cpu", "torch")
    assert figures.scopes("headline", plan) == ["mlp_small"] and not figures.scopes("scaling", plan)
    # regenerating keeps it: the runs table made again from the recorded runs alone
    table = res / "tables" / "runs.csv"
    os.utime(table, (0, 0))
    snake(str(table), "--cores", "2", "--forcerun", "tables", "--configfile", str(cfg), "--config", "regenerate=1")
    again = pd.read_csv(table).set_index("variant")
    assert os.path.getmtime(table) > 0
    assert again.loc["cuda_graph", "status"] == "unsupported" and len(again) == 3


def test_zoo_config_covers_every_model_and_variant():
    from fusionlab.plan import sweep
    from fusionlab.experiments.registry import MODEL_NAMES, VARIANT_NAMES
    with open(os.path.join(ROOT, "config", "zoo.yaml")) as f:
        cfg = sweep.validate(yaml.safe_load(f))
    assert set(cfg["models"]) == set(MODEL_NAMES) and set(cfg["variants"]) == set(VARIANT_NAMES)
