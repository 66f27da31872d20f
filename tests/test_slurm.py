"""Part of the CPU smoke sweep submitted through SLURM (snakemake-executor-plugin-slurm) on a
one-node cluster, checked against the local smoke sweep.

Start the cluster first: `bash tests/slurm/start_cluster.sh` (root; .ci/run does it).
Without a cluster the test is skipped, unless FUSIONLAB_REQUIRE_SLURM=1 (CI) fails it.
"""
import os
import shutil
import subprocess

import pandas as pd
import pytest
import yaml

from conftest import ROOT
from test_workflow import smoke, snake   # noqa: F401  (smoke: the session's fixture, by name)


def cluster_up() -> bool:
    if not shutil.which("sinfo"):
        return False
    p = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True)
    return p.returncode == 0 and any(s in p.stdout for s in ("idle", "mix", "alloc"))


@pytest.mark.slow
def test_sweep_through_slurm_matches_local(request, tmp_path):
    """mlp at batch 8 (eager and compile, its default size) of the smoke sweep, submitted
    through SLURM: the same rows as the session's local smoke sweep (test_workflow's
    `smoke`, the same config and code), every profiling job a SLURM job. The plugin's status
    checks start after 1 s and repeat every 1 s (its defaults, 40 s and 10 s, are for a busy
    cluster's scheduler, not for a test). The smoke sweep is asked for once this sweep has
    ended: the two run side by side, this one mostly waiting on the cluster."""
    if not cluster_up():
        if os.environ.get("FUSIONLAB_REQUIRE_SLURM") == "1":
            pytest.fail("no SLURM cluster is up (bash tests/slurm/start_cluster.sh)")
        pytest.skip("no SLURM cluster: run tests/slurm/start_cluster.sh as root")
    cluster = str(tmp_path / "cluster")
    cfg = yaml.safe_load(open(os.path.join(ROOT, "config", "smoke.yaml")))
    cfg.update(models=["mlp"], batch_sizes=[8], sizes={}, results=cluster)
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
    # its tables, summary and two figures: the analysis rules are localrules (the submitting
    # host runs them, as locally: test_workflow makes every figure of the smoke sweep)
    figs = [f"{cluster}/figures/{fig}.png" for fig in ("speedup_vs_batch/mlp", "roofline/all")]
    p = snake(f"{cluster}/tables/runs.csv", f"{cluster}/summary.md", *figs,
              "--profile", "profiles/slurm", "--configfile", str(tmp_path / "c.yaml"),
              "--slurm-status-command", "squeue", "--default-resources", "slurm_partition=debug",
              "mem_mb=2000", "runtime=30", "--set-threads", "profile_torch=1", "device_peaks=1", "--jobs", "2",
              "--slurm-init-seconds-before-status-checks", "1", "--seconds-between-status-checks", "1",
              timeout=900)
    keys = ["model", "variant", "batch", "size", "mode", "dtype", "repeat", "backend", "device", "status"]
    a = pd.read_csv(f"{cluster}/tables/runs.csv").sort_values(keys, ignore_index=True)
    local = request.getfixturevalue("smoke").runs
    b = local[(local.model == "mlp") & (local.batch == 8) & (local["size"] == "default")]
    b = b.sort_values(keys, ignore_index=True)
    assert len(a) == 2 and set(a.columns) <= set(b.columns)
    assert set(b.columns) - set(a.columns) <= {"dim", "num_layers", "hidden"}   # the size axes swept there
    assert a[keys].equals(b[keys])
    assert (a.status == "ok").all()
    # the profiling jobs really went through SLURM, at least one submission each
    out = p.stdout + p.stderr
    assert out.count("has been submitted with SLURM jobid") >= len(a)  # retries may add more
    for fig in figs:
        assert os.path.getsize(fig) > 1000
    assert os.path.exists(f"{cluster}/summary.md")
