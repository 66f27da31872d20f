"""The Nsight Compute step's plan (plan.ncu_plan): plain data the Snakefile builds
its rules from, decided from the config, the device, the backend and the run folders."""
import json

from fusionlab.core import ncu_passes
from fusionlab.plan import ncu_plan

DIRS = ["res/nsys/m/eager/inference_float32/bs8/r0", "res/nsys/m/eager/inference_float32/bs8/r1",
        "res/nsys/m/compile/inference_float32/bs8/r0"]
R0 = [DIRS[0], DIRS[2]]


def test_on_a_gpu_with_ncu_repeat_0_of_each_run_gets_the_default_passes():
    p = ncu_plan.plan({"enabled": "auto"}, "cuda", "nsys", False, "/usr/bin/ncu", DIRS)
    assert p["ncu"] == "/usr/bin/ncu" and p["off"] is None and p["note"] is None
    assert p["profile"] == p["traffic"] == R0
    assert p["inputs"] == [f"{d}/traffic.json" for d in R0]
    assert p["passes"] == ["steady"]   # the one-pass byte collection; cold, roofline and range opt-in
    assert p["options"] == ["--passes", "steady", "--iters", "3", "--warmup", "5", "--timeout", "900"]


def test_passes_come_in_the_steps_order_with_steady_always_first():
    assert ncu_plan.passes({"passes": ["range", "roofline"]}) == ["steady", "roofline", "range"]
    assert ncu_plan.passes({}) == list(ncu_passes.DEFAULT)


def test_where_nothing_is_profiled_the_plan_says_why():
    off = ncu_plan.plan({"enabled": False}, "cuda", "nsys", False, "ncu", DIRS)
    assert off["ncu"] is None and off["inputs"] == [] and off["note"] == "turned off (config key ncu.enabled: false)"
    cpu = ncu_plan.plan({"enabled": "auto"}, "cpu", "torch", False, "ncu", DIRS)
    assert cpu["note"] == "no GPU profiling here (device cpu, profiler torch)"
    none = ncu_plan.plan({"enabled": "auto"}, "cuda", "nsys", False, None, DIRS)
    assert none["ncu"] is None and "no Nsight Compute (ncu)" in none["note"]
    forced = ncu_plan.plan({"enabled": True}, "cuda", "nsys", False, None, DIRS)
    assert forced["ncu"] == "ncu"   # on: a machine without ncu fails its step, recorded


def test_regenerating_reads_reports_keeps_traffic_without_them_and_names_the_lost():
    ok = {"status": "ok", "steady": {"status": "ok", "report": "ncu_steady.ncu-rep"}}
    found = {DIRS[0]: {"files": {"ncu.json", "ncu_steady.ncu-rep"}, "step": ok},
             DIRS[2]: {"files": {"ncu.json", "traffic.json"}, "step": ok}}
    p = ncu_plan.plan({}, "cuda", "nsys", True, None, DIRS, found)
    assert p["ncu"] is None and p["kept"] == [DIRS[2]] and p["lost"] == [DIRS[0]]
    assert p["traffic"] == [DIRS[2]] and "1 run folder(s) have no .ncu-rep report" in p["messages"][1]
    found[DIRS[0]]["files"] |= {"traffic.json"}
    p = ncu_plan.plan({}, "cuda", "nsys", True, None, DIRS, found)
    assert p["lost"] == [] and p["traffic"] == R0
    # folders copied without the step's record: the note says so, not that nothing was profiled
    bare = {d: {"files": {"run.json", "timing.json"}, "step": None} for d in R0}
    p = ncu_plan.plan({}, "cuda", "nsys", True, None, DIRS, bare)
    assert p["inputs"] == [] and p["note"] == "no run folder holds the Nsight Compute step's record (ncu.json)"


def test_a_step_record_with_one_multi_pass_report_is_known_by_that_report():
    old = {"status": "ok", "kernel": {"status": "ok", "report": "ncu.ncu-rep"}}
    assert ncu_plan.reports_missing(set(), old) and not ncu_plan.reports_missing({"ncu.ncu-rep"}, old)
    assert not ncu_plan.reports_missing(set(), {"status": "failed"})


def test_survey_reads_the_folders_files_and_step(tmp_path):
    d = tmp_path / "r0"
    d.mkdir()
    (d / "ncu.json").write_text(json.dumps({"status": "ok"}))
    found = ncu_plan.survey([str(d), str(tmp_path / "missing")])
    assert found[str(d)] == {"files": {"ncu.json"}, "step": {"status": "ok"}}
    assert found[str(tmp_path / "missing")] == {"files": set(), "step": None}
