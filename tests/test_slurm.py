"""The CPU smoke sweep submitted through SLURM (snakemake-executor-plugin-slurm) on a
one-node cluster, checked against a local run of the same sweep.

Start the cluster first: `bash tests/slurm/start_cluster.sh` (root; .ci/run does it).
Without a cluster the test is skipped, unless FUSIONLAB_REQUIRE_SLURM=1 (CI) fails it.
"""
import os
import shutil
import subprocess

import pandas as pd
import pytest

from test_workflow import snake


def cluster_up() -> bool:
    if not shutil.which("sinfo"):
        return False
    p = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True)
    return p.returncode == 0 and any(s in p.stdout for s in ("idle", "mix", "alloc"))


@pytest.mark.slow
def test_smoke_sweep_through_slurm_matches_local(tmp_path):
    if not cluster_up():
        if os.environ.get("FUSIONLAB_REQUIRE_SLURM") == "1":
            pytest.fail("no SLURM cluster is up (bash tests/slurm/start_cluster.sh)")
        pytest.skip("no SLURM cluster: run tests/slurm/start_cluster.sh as root")
    cluster, local = str(tmp_path / "cluster"), str(tmp_path / "local")
    cfg = ["--configfile", "config/smoke.yaml"]
    p = snake("all", "--profile", "profiles/slurm", *cfg, "--config", f"results={cluster}",
          "--slurm-status-command", "squeue", "--default-resources", "slurm_partition=debug",
          "mem_mb=2000", "runtime=30", "--set-threads", "profile_torch=1", "device_peaks=1", "--jobs", "2",
          timeout=1500)
    snake("all", "--cores", "2", *cfg, "--config", f"results={local}")
    a = pd.read_csv(f"{cluster}/tables/runs.csv")
    b = pd.read_csv(f"{local}/tables/runs.csv")
    keys = ["model", "variant", "batch", "mode", "dtype", "repeat", "backend", "device", "status"]
    assert a.shape == b.shape
    assert a[keys].equals(b[keys])
    assert (a.status == "ok").all()
    # the profiling jobs really went through SLURM, at least one submission each
    out = p.stdout + p.stderr
    assert out.count("has been submitted with SLURM jobid") >= len(a)  # retries may add more
    for fig in ("speedup_vs_batch/mlp", "roofline/all"):
        assert os.path.exists(f"{cluster}/figures/{fig}.png")
    assert os.path.exists(f"{cluster}/summary.md")
