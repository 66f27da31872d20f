"""Bad or hostile input loses nothing and runs nothing: the config you give is the config
you get (integers, finite numbers, one-line strings, nsys options from an allow-list, a
results folder that cannot overwrite the checkout; YTE refused unless asked), a results
folder's captions are never templated, an unreadable run file is one error row, every CLI
error is one line with exit 2. (The kill -9 race: tests/test_run_owner.py.)"""
import json
import os
import shutil
import subprocess
import sys

import pandas as pd
import pytest
import yaml

from conftest import ROOT
from fusionlab.analysis.report import captions
from fusionlab.core.joblog import job_log
from fusionlab.plan import sweep
from test_workflow import smoke   # noqa: F401  (the session's smoke sweep)

GOOD = {"models": ["mlp_small"], "variants": ["eager"], "batch_sizes": [8]}
SNAKE = [sys.executable, "-m", "snakemake"]


def err(cfg, root=None):
    with pytest.raises(sweep.ConfigError) as e:
        sweep.validate(cfg, root=root)
    msg = str(e.value)
    assert "\n" not in msg
    return msg


@pytest.mark.parametrize("key, value, words", [
    ("batch_sizes", [8.0], ["batch_sizes[0]", "8.0", "integers"]),
    ("measure_iters", 2.0, ["measure_iters", "integers"]),
    ("repeats", 1.0, ["repeats", "integers"]),
    ("timeout_s", float("nan"), ["timeout_s", "nan", "finite"]),
    ("timeout_s", float("inf"), ["timeout_s", "inf", "finite"]),
    ("warmup_min_s", float("nan"), ["warmup_min_s", "finite"]),
    ("results", "x\n", ["results", "control character"]),
    ("pin_cpus", "2,3\n", ["pin_cpus", "control character"]),
])
def test_numbers_and_strings_are_what_they_say(key, value, words):
    msg = err({**GOOD, key: value})
    for w in words:
        assert w in msg, msg


@pytest.mark.parametrize("args, words", [
    ("-e LD_PRELOAD=/tmp/x.so", ["nsys.args", "'-e'", "not allowed"]),
    ("-o /anywhere --force-overwrite=true", ["'-o'", "not allowed"]),
    ("--output=/tmp/x", ["'--output'", "not allowed"]),
    ("-s cpu --cpuctxsw=$(id)", ["nsys.args", "characters outside"]),
    ("--cpuctxsw=all", ["--cpuctxsw", "'all' is not allowed"]),
    ("--cuda-graph-trace", ["no value"]),
])
def test_nsys_args_come_from_an_allow_list(args, words):
    msg = err({**GOOD, "nsys": {"args": args}})
    for w in words:
        assert w in msg, msg


def test_shipped_nsys_args_pass():
    cfg = sweep.validate({**GOOD, "nsys": {"args": "-s none --cpuctxsw=none --cuda-graph-trace=node"}})
    assert cfg["nsys"]["args"].startswith("-s none")


def test_results_cannot_overwrite_the_checkout_or_the_system(tmp_path):
    f = tmp_path / "file"
    f.write_text("")
    for results, why in [("/", "root"), (os.path.dirname(ROOT), "above it"), (ROOT, "the checkout"),
                         (f"{ROOT}/fusionlab/out", "source tree"), (f"{ROOT}/workflow", "source tree"),
                         (str(f), "a file")]:
        assert why in err({**GOOD, "results": results}, root=ROOT), results
    assert sweep.validate({**GOOD, "results": "results/x"}, root=ROOT)["results"] == "results/x"
    assert sweep.validate({**GOOD, "results": str(tmp_path / "r")}, root=ROOT)


def dry_run(cfg_path, *extra):
    return subprocess.run([*SNAKE, "all", "-n", "--configfile", str(cfg_path), *extra], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_a_configfile_is_the_config_you_get(tmp_path):
    """Keys the file leaves out come from the schema's defaults, not config.yaml (its
    batches, its 3 repeats), and the sweep's record lists them."""
    cfg = tmp_path / "only.yaml"
    cfg.write_text(yaml.safe_dump({**GOOD, "device": "cpu", "results": str(tmp_path / "r")}))
    p = dry_run(cfg, "-p")
    assert p.returncode == 0, p.stderr[-2000:]
    runs = [ln for ln in p.stdout.splitlines() if "fusionlab.runner" in ln]
    assert len(runs) == 1 and "--batch 8 " in runs[0] and "--repeat 0 " in runs[0], p.stdout[-3000:]


@pytest.mark.slow
def test_a_checkout_under_a_hostile_path_runs(tmp_path):
    """A checkout under a folder whose name has a space, a quote and $(...): every path in
    the job's shell command is quoted, so the run happens and nothing else does."""
    top = tmp_path / "it's a $(touch pwned) dir"
    top.mkdir()
    for name in ("Snakefile", "config.yaml", "environment.yml"):
        shutil.copy(os.path.join(ROOT, name), top / name)
    for name in ("fusionlab", "workflow", "profiles"):
        shutil.copytree(os.path.join(ROOT, name), top / name, ignore=shutil.ignore_patterns("__pycache__"))
    res = tmp_path / "r"
    cfg = tmp_path / "one.yaml"
    cfg.write_text(yaml.safe_dump({**GOOD, "device": "cpu", "results": str(res), "measure_iters": 2,
                                   "warmup_iters": 1, "timing_windows": 1, "paired_eager": False}))
    run = res / "runs/torch/mlp_small/eager/inference_float32/bs8/r0"
    p = subprocess.run([*SNAKE, str(run / "run.json"), "--cores", "1", "--configfile", str(cfg)], cwd=top,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    assert json.loads((run / "run.json").read_text())["status"] == "ok"
    assert not any(p.name == "pwned" for p in tmp_path.rglob("pwned"))


@pytest.mark.slow
def test_yte_configs_are_refused_unless_asked(tmp_path):
    from fusionlab.plan import config_checks
    cfg = tmp_path / "yte.yaml"
    cfg.write_text("__use_yte__: true\n" + yaml.safe_dump({**GOOD, "device": "cpu",
                                                           "results": str(tmp_path / "r")}))
    p = dry_run(cfg)
    assert p.returncode != 0 and "__use_yte__" in p.stderr and "allow_yte=true" in p.stderr, p.stderr[-2000:]
    config_checks.check_yte([str(cfg)], allowed=True)    # --config allow_yte=true


def test_captions_carry_no_template_or_markup():
    hostile = ("{{ cycler.__init__.__globals__.os.system('touch pwned') }} {% raw %}\n"
               ".. include:: /etc/passwd\n  .. raw:: html\n`x <javascript:alert(1)>`_ |sub| a\\b")
    safe = captions.safe_text(hostile)
    for bad in ("{", "}", "`", "|", "\\", "javascript:a", "\n.. ", "\n  .. "):
        assert bad not in safe, (bad, safe)
    assert captions.is_safe(safe) and not captions.is_safe(hostile)
    prose = "Setup: backend torch, gpu NVIDIA H100 80GB HBM3, dtype float32 (3 of 4 < 1.05x, 95% CI)."
    assert captions.safe_text(prose) == prose


def test_a_job_logs_its_own_traceback(tmp_path):
    log = tmp_path / "job.log"
    with pytest.raises(ValueError):
        with job_log(str(log)):
            json.loads("{not json")
    text = log.read_text()
    assert "Traceback" in text and "JSONDecodeError" in text


@pytest.mark.parametrize("argv, words", [
    (["--timeout", "nan", "--out", "x.json"], ["--timeout nan"]),
    (["--out", "{tmp}"], ["a folder"]),
])
def test_runner_argument_errors_are_one_line(tmp_path, capsys, argv, words):
    from fusionlab.runner import cli as runner_cli
    with pytest.raises(SystemExit) as e:
        runner_cli.parse_args(["--model", "mlp_small", "--variant", "eager", "--batch", "8"]
                              + [a.replace("{tmp}", str(tmp_path)) for a in argv])
    err = capsys.readouterr().err
    assert e.value.code == 2 and len(err.strip().splitlines()) == 1, err
    for w in words:
        assert w in err, err


@pytest.mark.parametrize("argv, words", [
    (["diff", "{tmp}/empty", "{tmp}/empty"], ["kernels.csv", "cannot be read"]),
    (["diff", "{tmp}/corrupt", "{tmp}/corrupt"], ["kernels.csv", "cannot be read"]),
    (["diff", "{tmp}/good", "{tmp}/good", "--csv", "/no/such/folder/x.csv"], ["/no/such/folder"]),
    (["compare", "{tmp}/corrupt", "{tmp}/corrupt"], ["speedups.csv", "cannot be read"]),
    (["compare", "{tmp}/good", "{tmp}/good", "--out", "{tmp}/file"], ["a file"]),
    (["progress", "{tmp}/badplan"], ["fusionlab progress"]),
])
def test_cli_errors_are_one_line_with_exit_2(tmp_path, argv, words):
    for name, kernels, speedups in [("empty", "", ""), ("corrupt", 'a,b\n1,"2\n\x00', '"x\n1,2,3\n4'),
                                    ("good", "name,kind,calls_per_iter,time_per_iter_us\nk,gemm,1,1.0\n", None)]:
        (tmp_path / name / "tables").mkdir(parents=True)
        (tmp_path / name / "kernels.csv").write_text(kernels)
        if speedups is not None:
            (tmp_path / name / "tables" / "speedups.csv").write_text(speedups)
    (tmp_path / "file").write_text("")
    (tmp_path / "badplan" / "logs").mkdir(parents=True)
    (tmp_path / "badplan" / "logs" / "sweep_plan.json").write_text(json.dumps({"runs": 5, "start_unix": "x"}))
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    p = subprocess.run([sys.executable, "-m", "fusionlab.cli", *argv], cwd=tmp_path, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 2, (p.returncode, p.stdout[-500:], p.stderr[-2000:])
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    for w in words:
        assert w in p.stderr, p.stderr


@pytest.mark.smoke_reader
def test_an_unreadable_run_file_is_one_error_row(smoke, tmp_path):
    """A corrupt run.json, metrics.json and kernels.csv in a copy of the smoke sweep: each
    run is a row with status error naming its file; every table is still written."""
    from fusionlab.analysis.run import run_metrics
    from fusionlab.analysis.sweep.build import build
    res = str(tmp_path / "results")
    shutil.copytree(smoke.res, res)
    dirs = sorted(os.path.dirname(p) for p in pd.Series(
        [os.path.join(dp, f) for dp, _, fs in os.walk(f"{res}/runs") for f in fs if f == "metrics.json"]))
    bad_run, bad_metrics, bad_kernels = dirs[0], dirs[1], dirs[2]
    with open(f"{bad_run}/run.json", "w") as f:
        f.write('{"status": "ok", ')
    row = run_metrics.main(f"{bad_run}/run.json", f"{bad_run}/trace.json", "torch", f"{bad_run}/metrics.json",
                           f"{bad_run}/kernels.csv")
    assert row["status"] == "error" and f"{bad_run}/run.json" in row["reason"] and row["model"]
    with open(f"{bad_metrics}/metrics.json", "w") as f:
        f.write("\x00\x01 not json")
    with open(f"{bad_kernels}/kernels.csv", "w") as f:
        f.write('name,"unterminated\n\x00')
    out = {k: f"{res}/tables/{k}.csv" for k in ("runs", "long", "speedups", "crossover", "kernels",
                                                 "breakdown", "scaling", "kernel_resources")}
    build([f"{d}/metrics.json" for d in dirs], [f"{d}/kernels.csv" for d in dirs], f"{res}/tables/costs.csv",
          None, out)
    runs = pd.read_csv(out["runs"])
    assert len(runs) == len(dirs)
    bad = runs[runs["reason"].fillna("").str.contains("cannot be read")]
    assert len(bad) == 2 and set(bad["status"]) == {"error"}
    assert bad["reason"].str.contains(f"{bad_metrics}/metrics.json", regex=False).any()
    assert bad["reason"].str.contains(f"{bad_run}/run.json", regex=False).any()
    assert all(os.path.getsize(p) > 0 for p in out.values())


def test_compare_warns_when_two_sweeps_share_no_configuration(tmp_path):
    cols = "model,variant,batch,size,mode,dtype,backend,device,wall_time_per_iter_ms\n"
    for name, model in (("a", "mlp"), ("b", "softmax")):
        (tmp_path / name / "tables").mkdir(parents=True)
        (tmp_path / name / "tables" / "speedups.csv").write_text(
            cols + f"{model},compile,8,default,inference,float32,torch,cpu,1.0\n")
    p = subprocess.run([sys.executable, "-m", "fusionlab.cli", "compare", str(tmp_path / "a"), str(tmp_path / "b"),
                        "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "share no configuration" in p.stderr and (tmp_path / "out" / "compare.csv").exists()
