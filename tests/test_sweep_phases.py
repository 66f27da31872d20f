"""benchmarks/sweep_phases.py: the phases a sweep's untraced processes recorded, summed over
its runs with each phase's share, median and maximum; a run stopped before its check, or
with no timing record, does not count."""
import importlib.util
import json
import os
import subprocess
import sys

from conftest import ROOT

PATH = os.path.join(ROOT, "benchmarks", "sweep_phases.py")


def _module():
    spec = importlib.util.spec_from_file_location("sweep_phases", PATH)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def _run(root, name, phases):
    d = root / "runs" / "nsys" / "m" / name / "inference_bfloat16" / "bs8" / "r0"
    d.mkdir(parents=True)
    if phases is not None:
        (d / "timing.json").write_text(json.dumps({"status": "ok", "phases_s": phases}))
    return d


def test_phases_sum_over_the_runs_that_ran_their_check(tmp_path):
    a = _run(tmp_path, "eager", {"imports": 4.0, "gpu_wait": 10.0, "check": 2.0, "timing": 4.0})
    b = _run(tmp_path, "compile", {"imports": 4.0, "gpu_wait": 30.0, "check": 20.0, "timing": 6.0})
    stopped = _run(tmp_path, "compile_max_autotune_no_cudagraphs", {"imports": 4.0, "gpu_wait": 8.0})
    empty = _run(tmp_path, "compile_reduce_overhead", None)
    out = _module().phases([str(a), str(b), str(stopped), str(empty)])
    assert out["runs"] == 2
    assert out["gpu_wait"] == {"total_s": 40.0, "share": 0.5, "median_s": 20.0, "max_s": 30.0}
    assert out["check"] == {"total_s": 22.0, "share": 0.275, "median_s": 11.0, "max_s": 20.0}
    assert sum(v["share"] for k, v in out.items() if k != "runs") == 1.0
    p = subprocess.run([sys.executable, PATH, str(tmp_path)], capture_output=True, text=True)
    assert p.returncode == 0 and json.loads(p.stdout) == out
