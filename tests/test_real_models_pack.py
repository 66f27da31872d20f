"""benchmarks/gpu/real_models.sh --pack: what a lease brings back from a results folder at
any moment, a run still going too (its finished files), never the profiles."""
import os
import subprocess
import tarfile

from conftest import ROOT

RULE_TIMES = os.path.join("benchmarks", "time_untraced" + ".tsv")   # a rule's times (Snakemake's benchmark:)


def test_pack_takes_each_runs_records_and_leaves_the_profiles(tmp_path):
    res = tmp_path / "results"
    done = res / "runs" / "nsys" / "bert" / "compile" / "inference_bfloat16" / "bs8" / "r0"
    going = res / "runs" / "nsys" / "vit" / "eager" / "inference_bfloat16" / "bs32" / "r0"
    for d, names in ((done, ["run.json", "timing.json", "metrics.json", "kernels.csv", "ncu.json", "ncu_run.json",
                             "report.nsys-rep", "report.sqlite", "ncu_steady.ncu-rep"]),
                     (going, ["timing.json"])):
        (d / "benchmarks").mkdir(parents=True)
        (d / RULE_TIMES).write_text("s\n1.0\n")
        for n in names:
            (d / n).write_text("{}")
    (res / "tables").mkdir()
    (res / "tables" / "runs.csv").write_text("model\n")
    out = tmp_path / "out"
    p = subprocess.run(["bash", os.path.join(ROOT, "benchmarks", "gpu", "real_models.sh"), "--pack", str(out)],
                       env={**os.environ, "REAL_MODELS_RESULTS": str(res)}, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    with tarfile.open(out / "real-models.tgz") as t:
        names = {os.path.relpath("/" + n, str(res)) for n in t.getnames()}
    files = {n for n in names if "." in os.path.basename(n)}
    run = "runs/nsys/bert/compile/inference_bfloat16/bs8/r0"
    assert {f"{run}/{n}" for n in ("run.json", "timing.json", "metrics.json", "kernels.csv", "ncu.json", "ncu_run.json",
                                   RULE_TIMES)} <= files
    assert "runs/nsys/vit/eager/inference_bfloat16/bs32/r0/timing.json" in files   # the run still going
    assert "tables/runs.csv" in files
    assert not {n for n in files if n.endswith((".nsys-rep", ".sqlite", ".ncu-rep"))}
    assert os.listdir(out) == ["real-models.tgz"]


def test_two_packs_at_once_leave_one_whole_pack(tmp_path):
    """A `--pack` from another shell beside the stage's own pack: each writes under its own
    name and renames, so both succeed and the pack left is whole."""
    res = tmp_path / "results"
    run = res / "runs" / "nsys" / "bert" / "compile" / "inference_bfloat16" / "bs8" / "r0"
    run.mkdir(parents=True)
    (run / "run.json").write_bytes(os.urandom(4 << 20))   # seconds of gzip: the packs overlap
    out = tmp_path / "out"
    cmd = ["bash", os.path.join(ROOT, "benchmarks", "gpu", "real_models.sh"), "--pack", str(out)]
    env = {**os.environ, "REAL_MODELS_RESULTS": str(res)}
    packs = [subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    assert [p.wait() for p in packs] == [0, 0, 0], [p.stderr.read() for p in packs]
    assert os.listdir(out) == ["real-models.tgz"]
    with tarfile.open(out / "real-models.tgz") as t:
        assert any(n.endswith("bs8/r0/run.json") for n in t.getnames())
