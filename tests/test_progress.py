"""`fusionlab progress`: a folder that does not exist is an error; a killed sweep (its lock
file names a pid that has ended) or one that let go of its lock before its runs were done
is reported as not running, with no time left; a plan that is not one is one line naming
it."""
import json
import os
import socket
import subprocess
import sys
import time

import pytest

from fusionlab import cli
from fusionlab.plan import progress, sweep_lock


def dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def plan(tmp_path, runs=4, done=1):
    dirs = [str(tmp_path / f"r{i}") for i in range(runs)]
    for d in dirs:
        os.makedirs(d)
    progress.write_plan(str(tmp_path), dirs, gpus=1)
    for d in dirs[:done]:
        open(os.path.join(d, "metrics.json"), "w").close()
    return dirs


def test_a_folder_that_does_not_exist_exits_non_zero_with_one_line(tmp_path, capsys):
    missing = tmp_path / "nope"
    assert cli.main(["progress", str(missing)]) == 1
    out = capsys.readouterr()
    assert out.out == "" and out.err == f"fusionlab progress: no results folder {missing}\n"


def test_a_killed_sweep_is_not_running(tmp_path, capsys):
    plan(tmp_path)
    pid = dead_pid()
    with open(sweep_lock.lock_path(str(tmp_path)), "w") as f:
        json.dump({"pid": pid, "host": socket.gethostname(), "start_unix": time.time(), "argv": "snakemake"}, f)
    assert sweep_lock.stopped(str(tmp_path))["pid"] == pid
    assert cli.main(["progress", str(tmp_path)]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith("fusionlab progress: 1/4 runs (25%); the sweep is not running")
    assert f"pid {pid} " in line and "left" not in line and "elapsed" not in line


def test_a_live_sweep_gets_its_estimate_and_one_that_let_go_is_not_running(tmp_path, capsys):
    plan(tmp_path)
    sweep_lock.acquire(str(tmp_path))          # this process: alive, holding the lock
    try:
        assert sweep_lock.stopped(str(tmp_path)) is None
        assert "not running" not in progress.line(str(tmp_path)) and "left" in progress.line(str(tmp_path))
    finally:
        sweep_lock.release(str(tmp_path))      # let go (SIGTERM, Ctrl-C, a failed job): the record is cleared
    assert sweep_lock.stopped(str(tmp_path)) is None
    assert progress.line(str(tmp_path)) == (
        "fusionlab progress: 1/4 runs (25%); the sweep is not running (it let go of its lock: it ended or was "
        "stopped before its runs were done): run the same command again to resume it")
    os.remove(sweep_lock.lock_path(str(tmp_path)))       # no lock file (a sweep that takes none): the estimate
    assert "left" in progress.line(str(tmp_path))
    # a folder with no plan yet: the line says so, exit 0
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli.main(["progress", str(empty)]) == 0
    assert "no sweep plan" in capsys.readouterr().out


def test_a_dead_pid_of_another_host_is_not_judged(tmp_path):
    plan(tmp_path)
    with open(sweep_lock.lock_path(str(tmp_path)), "w") as f:
        json.dump({"pid": dead_pid(), "host": "elsewhere.invalid", "start_unix": time.time()}, f)
    assert sweep_lock.stopped(str(tmp_path)) is None
    assert "left" in progress.line(str(tmp_path))


def test_not_recorded_names_each_configuration_without_a_run_once_whatever_its_repeats():
    """Two batch sizes x two variants at two repeats asked for; compile at 64 has no run,
    eager at 1024 has only its repeat 1: only compile at 64 is not recorded."""
    cfg = {"models": ["softmax"], "variants": ["eager", "compile"], "mode": ["inference"],
           "dtype": ["float32"], "batch_sizes": [64, 1024], "repeats": 2}
    from fusionlab.plan import sweep
    cfg = sweep.validate(cfg, regenerate=True)
    runs = sweep.runs(cfg, "torch")
    recorded = [r for r in runs if not (r["variant"] == "compile" and r["batch"] == 64)
                and not (r["variant"] == "eager" and r["batch"] == 1024 and r["repeat"] == 0)]
    assert progress.not_recorded(cfg, "torch", recorded) == [
        {"model": "softmax", "variant": "compile", "mode": "inference", "dtype": "float32", "batch": 64, "size": ""}]
    assert progress.not_recorded(cfg, "torch", runs) == []


def test_a_configuration_not_recorded_names_its_backend_device_and_size_values_with_a_device():
    """With the device, each configuration with no run carries what a recorded run of it
    would: backend, device and its size axes (the model's defaults, and its label's)."""
    from fusionlab.plan import sweep
    cfg = sweep.validate({"models": ["softmax"], "variants": ["eager"], "mode": ["inference"],
                          "dtype": ["float32"], "batch_sizes": [64], "sizes": {"softmax": {"dim": [64, 1024]}},
                          "repeats": 1}, regenerate=True)
    got = progress.not_recorded(cfg, "nsys", [], device="cuda")
    defaults = {a: d["default"] for a, d in sweep.catalog.sizes("softmax").items()}
    assert [(c["size"], c["backend"], c["device"], c["sizes"]) for c in got] == [
        ("-dim64", "nsys", "cuda", {**defaults, "dim": 64}), ("-dim1024", "nsys", "cuda", {**defaults, "dim": 1024})]


@pytest.mark.parametrize("text, said", [
    ("", "cannot be read (JSONDecodeError: Expecting value: line 1 column 1 (char 0))"),
    ("[1]", "not a sweep plan (a JSON object)"),
    ('{"runs": 1e400, "start_unix": 1}', "runs is inf, not a list of run folders"),
    ('{"runs": [1, 2], "start_unix": 1}', "runs is [1, 2], not a list of run folders"),
    ('{"runs": ["a"], "start_unix": NaN}', "start_unix is nan, not a finite time"),
    ('{"runs": ["a"], "start_unix": 1, "done_at_start": 7}', "done_at_start is 7, not a count of 0..1 runs"),
])
def test_a_plan_that_is_not_one_is_one_line_naming_it(tmp_path, capsys, text, said):
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "sweep_plan.json").write_text(text)
    assert cli.main(["progress", str(tmp_path)]) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err == f"fusionlab progress: {tmp_path}/logs/sweep_plan.json: {said}\n"
