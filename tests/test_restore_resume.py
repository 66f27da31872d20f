"""A sweep goes on from runs kept without their Nsight report: restore leaves out a run
whose files come from two profiles (by the times the archive keeps), the workflow profiles
and exports the rest no more, and refuses records of another GPU model."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT
from fusionlab.plan import restore
from test_restore import pack

RUN = "runs/nsys/m/compile/inference_float32/bs8{}/r0"
T = 1.7e9


def folder(tmp_path, times: dict, extra=(), name="r0"):
    d = tmp_path / name
    d.mkdir()
    for name, t in times.items():
        (d / name).write_text("{}")
        os.utime(d / name, (t, t))
    for name in extra:
        (d / name).write_text("")
    return str(d)


@pytest.mark.parametrize("times, is_stale", [
    ({"timing.json": T, "run.json": T + 1, "metrics.json": T + 2, "kernels.csv": T + 2, "attribution.csv": T + 3}, False),
    ({"timing.json": T, "run.json": T + 1, "metrics.json": T + 1}, False),           # one second: same time is one profile
    ({"timing.json": T, "run.json": T + 1, "metrics.json": T + 0.5}, True),          # metrics of the profile before
    ({"timing.json": T, "run.json": T + 1, "metrics.json": T + 2, "kernels.csv": T + 0.5}, True),
    ({"timing.json": T, "run.json": T + 1, "metrics.json": T + 2, "attribution.csv": T}, True),
    ({"timing.json": T + 2, "run.json": T + 1, "metrics.json": T + 3}, True),        # timed again, not profiled
    ({"timing.json": T, "metrics.json": T - 1}, False),                              # no run.json: unfinished, not stale
    ({"run.json": T + 1, "metrics.json": T + 2}, False),                             # no timing.json
])
def test_stale_by_the_files_times(tmp_path, times, is_stale):
    assert restore.stale(folder(tmp_path, times)) is is_stale


def test_a_run_with_its_report_is_never_stale_and_never_recorded_without_it(tmp_path):
    for i, name in enumerate(restore.PROFILE_FILES):
        d = folder(tmp_path, {"timing.json": T, "run.json": T + 1, "metrics.json": T}, extra=[name], name=f"r{i}")
        assert not restore.stale(d) and not restore.recorded_without_profile(d)


@pytest.mark.parametrize("names, recorded", [
    (("run.json", "metrics.json"), True),
    (("run.json", "metrics.json", "timing.json", "kernels.csv"), True),
    (("run.json",), False),                    # profiled, its metrics never made: the sweep exports it
    (("metrics.json",), False),
    (("timing.json",), False),
])
def test_recorded_without_profile(tmp_path, names, recorded):
    assert restore.recorded_without_profile(folder(tmp_path, dict.fromkeys(names, T))) is recorded


def test_restore_leaves_out_a_stale_run_and_says_so(tmp_path, capsys):
    ok, old = RUN.format(""), RUN.format("-dim64")
    files = {f"{ok}/timing.json": "t", f"{ok}/run.json": "r", f"{ok}/metrics.json": "m",
             f"{old}/timing.json": "t", f"{old}/run.json": "r", f"{old}/metrics.json": "m"}
    times = {f"{ok}/timing.json": T, f"{ok}/run.json": T + 10, f"{ok}/metrics.json": T + 20,
             f"{old}/timing.json": T, f"{old}/run.json": T + 10, f"{old}/metrics.json": T + 5}
    archive = pack(tmp_path / "a.tgz", files, prefix="", times=times)
    res = str(tmp_path / "res")
    assert restore.main([res, archive]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"{res}: 1 runs from 1 archive(s); left out 0 unfinished run(s), 1 stale run(s) and 0 killed Nsight "
        f"Compute record(s); every file given one time",
        f"  left out a run (files from two profiles, the report not packed): {old}"]
    assert os.path.isfile(os.path.join(res, ok, "metrics.json")) and not os.path.exists(os.path.join(res, old))
    # restored, every file has one time: the kept run is recorded and no longer judged stale by its times
    assert restore.recorded_without_profile(os.path.join(res, ok)) and not restore.stale(os.path.join(res, ok))


def test_other_gpu_names_the_first_run_of_another_model(tmp_path):
    dirs = []
    for i, rec in enumerate([{"gpu": "NVIDIA H100 80GB HBM3"}, {"gpu": None}, {}, "[]", {"gpu": "NVIDIA H200"}]):
        d = tmp_path / f"r{i}"
        d.mkdir()
        (d / "run.json").write_text(rec if isinstance(rec, str) else json.dumps(rec))
        dirs.append(str(d))
    dirs.append(str(tmp_path / "none"))         # no run.json
    assert restore.other_gpu(dirs, {"NVIDIA H100 80GB HBM3"}) == (dirs[4], "NVIDIA H200")
    assert restore.other_gpu(dirs, {"NVIDIA H100 80GB HBM3", "NVIDIA H200"}) is None
    assert restore.other_gpu(dirs, set()) == (dirs[0], "NVIDIA H100 80GB HBM3")


def test_other_axes_names_a_run_built_with_other_size_axes(tmp_path):
    cases = [({"sizes": {"hidden": 4096, "ops": 3}}, {"hidden": {}, "steps": {}}, ["hidden", "ops"]),
             ({"sizes": {"hidden": 4096, "steps": 3}}, {"hidden": {}, "steps": {}}, None),
             ({"sizes": {}}, {}, None),                                  # a model without size axes
             ({"sizes": {}}, {"hidden": {}}, []),                        # an axis added since
             ({"sizes": {"hidden": 8}}, {}, ["hidden"]),                 # an axis removed since
             ({}, {"hidden": {}}, None),                                 # no sizes recorded: not judged
             ({"sizes": "hidden"}, {"hidden": {}}, None)]
    for i, (rec, axes, want) in enumerate(cases):
        d = tmp_path / f"r{i}"
        d.mkdir()
        (d / "run.json").write_text(json.dumps(rec))
        assert restore.other_axes(str(d), axes) == want, rec
    assert restore.other_axes(str(tmp_path / "none"), {"hidden": {}}) is None      # no run.json


@pytest.mark.slow          # three Snakemake dry runs
def test_the_workflow_goes_on_from_a_run_kept_without_its_report(tmp_path):
    """With an nsys on PATH (a stand-in that only says its version: a dry run starts no
    profile), a run holding run.json and metrics.json and no report is neither timed,
    profiled, exported nor measured again; recorded with size axes its model no longer has,
    or without its metrics.json, it is profiled."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nsys").write_text("#!/bin/sh\necho 'NVIDIA Nsight Systems version 2025.3.1.90-253135822126v0'\n")
    (bin_dir / "nsys").chmod(0o755)
    res = tmp_path / "res"
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"models: [mlp_small]\nvariants: [eager]\nbatch_sizes: [8]\ndevice: cpu\nprofiler: nsys\n"
                   f"repeats: 1\nncu: {{enabled: false}}\nresults: {res}\n")
    run = res / "runs/nsys/mlp_small/eager/inference_float32/bs8/r0"
    (run / "stats").mkdir(parents=True)
    for name in ("timing.json", "run.json", "metrics.json", "kernels.csv", "attribution.csv", "stats/kern_sum.csv"):
        (run / name).write_text("{}")
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}")

    def dry_run():
        p = subprocess.run([sys.executable, "-m", "snakemake", "all", "-n", "--cores", "1", "--configfile", str(cfg)],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr[-2000:]
        return {ln.split()[1].rstrip(":") for ln in (p.stdout + p.stderr).splitlines() if ln.startswith("rule ")}, p.stderr

    rules, err = dry_run()
    assert "1 run(s) kept without their Nsight report" in err
    assert not rules & {"time_untraced", "profile_nsys", "nsys_export_sqlite", "nsys_stats", "run_metrics",
                        "run_attribution"}, rules
    assert {"tables", "attribution", "summary"} <= rules
    # recorded by a factory with other size axes than the model's now: measured again
    (run / "run.json").write_text(json.dumps({"sizes": {"renamed": 3}}))
    rules, err = dry_run()
    assert "1 restored run(s) recorded with other size axes" in err and "axes renamed" in err
    assert {"profile_nsys", "nsys_export_sqlite", "run_metrics"} <= rules, rules
    (run / "run.json").write_text("{}")
    (run / "metrics.json").unlink()
    rules, err = dry_run()
    assert "kept without" not in err and {"profile_nsys", "nsys_export_sqlite", "run_metrics"} <= rules, rules
