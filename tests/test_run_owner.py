"""One owner per run folder (core.owner), on real processes: a runner left running by a
killed sweep (an orphan) keeps the results folder busy, a second runner on its folder
writes nothing, and the orphan's late record never lands on a folder made again under it;
a Snakemake sweep killed alone (kill -9, not its process group) and run again at once is
refused, naming the orphan's pid."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest
import yaml

from conftest import ROOT
from fusionlab.core import owner
from fusionlab.plan import progress, sweep_lock

RUN = "runs/torch/mlp_small/eager/inference_float32/bs8/r0"


def runner(out, fault="hang", timeout=0):
    """The runner of mlp_small eager batch 8 on the CPU, hung in its check step by the
    fault injection, in a session of its own (no parent sweep: an orphan's situation)."""
    env = {**os.environ, "FUSIONLAB_INJECT_FAULT": f"mlp_small:eager:8={fault}"}
    cmd = [sys.executable, "-m", "fusionlab.runner", "--model", "mlp_small", "--variant", "eager",
           "--batch", "8", "--device", "cpu", "--iters", "2", "--warmup", "1", "--windows", "1",
           "--timeout", str(timeout), "--out", str(out)]
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)


def wait_for(path, proc, limit=120):
    deadline = time.time() + limit
    while not os.path.exists(path) and proc.poll() is None and time.time() < deadline:
        time.sleep(0.1)
    assert os.path.exists(path), proc.stdout.read() if proc.poll() is not None else "no record yet"


def stop(proc):
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


@pytest.mark.slow
def test_an_orphan_keeps_the_folder_busy_and_its_late_write_never_lands(tmp_path):
    res = tmp_path / "results"
    run = res / RUN
    orphan = runner(run / "run.json", timeout=30)   # its time limit fires after the checks below
    try:
        wait_for(run / "run.json", orphan)
        # the next sweep on this folder is refused, naming the orphan's pid
        with pytest.raises(sweep_lock.Busy, match=f"pid {orphan.pid} on .*{RUN}"):
            sweep_lock.acquire(str(res))
        assert f"pid {orphan.pid}" in subprocess.run(
            [sys.executable, "-m", "fusionlab.plan.sweep_lock", str(res)],
            capture_output=True, text=True).stdout
        # a second runner on the same folder starts nothing and writes nothing
        second = runner(run / "run.json", fault="error")
        out, _ = second.communicate(timeout=120)
        assert second.returncode == 4 and f"pid {orphan.pid}" in out, out
        assert json.loads((run / "run.json").read_text())["reason"].startswith("the process died")
        # the folder is made again under the orphan and finished by someone else
        for name in os.listdir(run):
            os.remove(run / name)
        os.rmdir(run)
        run.mkdir()
        finished = {"status": "ok", "reason": None}
        (run / "run.json").write_text(json.dumps(finished))
        # the orphan's time limit fires (it writes a `timeout` record): not over the finished run
        out, _ = orphan.communicate(timeout=120)
        assert orphan.returncode == 3, out
        assert "no longer this process's run folder" in out and "not written" in out, out
        assert json.loads((run / "run.json").read_text()) == finished
        assert sweep_lock.orphans(str(res)) == []
    finally:
        stop(orphan)


@pytest.mark.slow
def test_a_sweep_killed_alone_is_not_resumed_while_its_job_runs(tmp_path):
    res = tmp_path / "results"
    cfg = tmp_path / "one.yaml"
    cfg.write_text(yaml.safe_dump({"models": ["mlp_small"], "variants": ["eager"], "batch_sizes": [8],
                                   "measure_iters": 2, "warmup_iters": 1, "timing_windows": 1,
                                   "paired_eager": False, "results": str(res)}))
    cmd = [sys.executable, "-m", "snakemake", "all", "--cores", "1", "--configfile", str(cfg)]
    env = {**os.environ, "FUSIONLAB_INJECT_FAULT": "mlp_small:eager:8=hang"}
    sweep = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_for(res / RUN / "run.json", sweep, limit=300)
        os.kill(sweep.pid, signal.SIGKILL)       # Snakemake alone: its job runs on
        sweep.wait()
        live = sweep_lock.orphans(str(res))
        assert [o["run_dir"] for o in live] == [str(res / RUN)]
        again = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert again.returncode != 0
        assert f"pid {live[0]['pid']}" in again.stderr and "still run" in again.stderr, again.stderr[-2000:]
        assert "still run" in progress.line(str(res))
        assert json.loads((res / RUN / "run.json").read_text())["reason"].startswith("the process died")
    finally:
        os.killpg(sweep.pid, signal.SIGKILL)
    deadline = time.time() + 30
    while owner.live_owners(str(res)) and time.time() < deadline:
        time.sleep(0.1)
    assert owner.live_owners(str(res)) == []
