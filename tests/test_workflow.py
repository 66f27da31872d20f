"""The workflow end to end on the CPU smoke config, as a user runs it, with faults
injected: a killed sweep, an OOM and a raising experiment, a corrupt profile."""
import glob
import os
import shutil
import signal
import subprocess
import sys
import time

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


def test_lint_clean():
    p = snake("--lint", check=False)
    assert p.returncode == 0, p.stdout + p.stderr


@pytest.mark.parametrize("override, words", [
    ({"models": ["resnet"]}, ["models[0]", "'resnet'", "allowed values", "mlp"]),
    ({"batch_sizes": [0]}, ["batch_sizes[0]", ">= 1"]),
    ({"batch_sizes": []}, ["batch_sizes", "empty"]),
    ({"batch_sizes": "big"}, ["batch_sizes", "'big'", "array"]),
    ({"colour": "red"}, ["'colour'", "allowed keys"]),
    ({"variants": ["eager; rm -rf ~"]}, ["variants[0]", "allowed values"]),
])
def test_bad_config_stops_before_running(tmp_path, override, words):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(yaml.safe_dump({**override, "results": f"{tmp_path}/r"}))
    p = snake("-n", "--configfile", str(cfg), check=False)
    assert p.returncode != 0
    out = p.stdout + p.stderr
    for w in words:
        assert w in out, (w, out[-2000:])
    assert not (tmp_path / "r").exists()


def test_smoke_sweep_end_to_end(tmp_path):
    res = str(tmp_path / "results")
    common = ["all", "--cores", "2", "--configfile", "config/smoke.yaml", "--config", f"results={res}"]
    faults = {"FUSIONLAB_INJECT_FAULT": "mlp:compile:32=oom,pointwise_heavy:eager:8=error"}

    # 1. a sweep killed mid-run leaves nothing that looks complete
    proc = subprocess.Popen(SNAKE + common, cwd=ROOT, env={**os.environ, **faults},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 300
    while time.time() < deadline and not any(f == "run.json" for _, _, fs in os.walk(res) for f in fs):
        time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()

    # 2. rerunning completes it (after --unlock: the killed Snakemake left its lock);
    #    failures are recorded and the sweep goes on
    snake(*common, "--unlock")
    snake(*common, "--rerun-incomplete", "--keep-going", env=faults)
    runs = pd.read_csv(f"{res}/tables/runs.csv")
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
    assert not [f for _, _, fs in os.walk(res) for f in fs if ".tmp" in f]

    # 3. a corrupt profile: one-line reason in the table, the other runs still analysed
    d = f"{res}/runs/torch/mlp/eager/inference_float32/bs8/r0"
    with open(f"{d}/trace.json", "w") as f:
        f.write('{"traceEvents": [trunc')
    snake(*common, "--keep-going", env=faults)
    runs = pd.read_csv(f"{res}/tables/runs.csv")
    row = runs[(runs.model == "mlp") & (runs.variant == "eager") & (runs.batch == 8) & (runs["size"] == "default")].iloc[0]
    assert row.status == "error" and "trace.json: not a torch.profiler Chrome trace" in row.reason
    assert (runs.status == "ok").sum() == 12

    # 4. figures, tables and summary again from the recorded profiles alone (no profiling),
    #    then Snakemake's HTML report
    before = {p: os.path.getmtime(p) for p in (f"{d}/trace.json", f"{d}/run.json")}
    p = snake("regenerate", "--cores", "2", "--forceall", "--configfile", "config/smoke.yaml",
              "--config", f"results={res}", "regenerate=1")
    assert "regenerating from 16 recorded torch runs" in p.stderr
    assert "profile_torch" not in p.stdout + p.stderr
    assert {p: os.path.getmtime(p) for p in before} == before
    pd.testing.assert_frame_equal(pd.read_csv(f"{res}/tables/runs.csv"), runs)
    check_analysis_outputs(res)
    snake("--report", f"{res}/report.html", "--configfile", "config/smoke.yaml", "--config", f"results={res}")
    assert os.path.getsize(f"{res}/report.html") > 100_000

    # 5. the same from results copied without their profiles: metrics.json kept as it is
    copy = f"{res}-copied"
    shutil.copytree(res, copy, ignore=shutil.ignore_patterns("trace.json", "figures", "tables", "summary.md"))
    metrics = {p: open(p).read() for p in glob.glob(f"{copy}/runs/**/metrics.json", recursive=True)}
    assert len(metrics) == 16
    p = snake("regenerate", "--cores", "2", "--forceall", "--configfile", "config/smoke.yaml",
              "--config", f"results={copy}", "regenerate=1")
    assert "16 without their profile (not copied): every run's metrics.json is used as it is" in p.stderr
    assert "run_metrics" not in p.stdout + p.stderr
    assert {p: open(p).read() for p in metrics} == metrics
    pd.testing.assert_frame_equal(pd.read_csv(f"{copy}/tables/runs.csv"), runs)
    check_analysis_outputs(copy)


def check_analysis_outputs(res):
    from fusionlab.analysis.plots import FIGURES
    for fig, (_, scope, _) in FIGURES.items():
        for s in (["mlp", "matmul_heavy", "pointwise_heavy"] if scope == "model" else ["all"]):
            for ext in ("png", "svg"):
                assert os.path.getsize(f"{res}/figures/{fig}/{s}.{ext}") > 1000, (fig, s)
    summary = open(f"{res}/summary.md").read()
    assert "## Speedup over eager (wall time)" in summary
    mlp = summary.split("### mlp", 1)[1].split("###", 1)[0]
    assert ("| variant | default, batch 8 | default, batch 32 | hidden256, batch 8 | hidden256, batch 32 |" in mlp
            and "| oom |" in mlp)      # the oom run is listed
    assert "## Where the speedup comes from" in summary
    bd = pd.read_csv(f"{res}/tables/speedup_breakdown.csv")
    for _, g in bd.groupby(["model", "batch", "size", "variant"]):    # the parts add up to the total
        parts = g[g.part != "total"].saved_ms.sum()
        assert abs(parts - g[g.part == "total"].saved_ms.item()) < 1e-9
    assert "## Crossover: where a variant starts and stops beating eager" in summary
    from fusionlab.analysis import scaling     # smoke sweeps no axis with 3 values: header only
    assert list(pd.read_csv(f"{res}/tables/scaling.csv").columns) == scaling.COLUMNS
    assert "ties" in pd.read_csv(f"{res}/tables/crossover.csv").columns
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


def test_unsupported_pairs_recorded_without_profiling(tmp_path):
    """A pair the device cannot run (cuda_graph on a CPU) is a row with its reason, no
    profiler runs for it, and regenerating keeps it."""
    res = tmp_path / "results"
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"models": ["mlp_small"], "variants": ["eager", "cuda_graph", "nn_linear"],
                                   "batch_sizes": "default", "warmup_iters": 1, "measure_iters": 2,
                                   "repeats": 1, "device": "cpu", "results": str(res)}))
    snake("all", "--cores", "2", "--configfile", str(cfg))
    runs = pd.read_csv(res / "tables" / "runs.csv").set_index("variant")
    assert list(runs["batch"]) == [128] * 3                     # the model's default batch
    assert runs.loc["cuda_graph", "status"] == "unsupported"
    assert "needs device cuda" in runs.loc["cuda_graph", "reason"]
    assert runs.loc["nn_linear", "status"] == "ok" and runs.loc["eager", "status"] == "ok"
    d = res / "runs" / "torch" / "mlp_small" / "cuda_graph" / "inference_float32" / "bs128" / "r0"
    assert (d / "unsupported.json").exists() and not (d / "trace.json").exists()
    snake("regenerate", "--cores", "2", "--forceall", "--configfile", str(cfg), "--config", "regenerate=1")
    again = pd.read_csv(res / "tables" / "runs.csv").set_index("variant")
    assert again.loc["cuda_graph", "status"] == "unsupported" and len(again) == 3


def test_zoo_config_covers_every_model_and_variant():
    from fusionlab.experiments import sweep
    from fusionlab.experiments.registry import MODEL_NAMES, VARIANT_NAMES
    with open(os.path.join(ROOT, "config", "zoo.yaml")) as f:
        cfg = sweep.validate(yaml.safe_load(f))
    assert set(cfg["models"]) == set(MODEL_NAMES) and set(cfg["variants"]) == set(VARIANT_NAMES)
