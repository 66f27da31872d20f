# Helpers shared by the rules: run folders, the runner's command line, the outputs.

import os
import json
import shlex

from fusionlab.analysis.report import captions as report_captions
from fusionlab.analysis.report import figures as report_figures
from fusionlab.core import ncu_passes
from fusionlab.plan import gpu_slots, machine, ncu_plan, restore

ENV = "../../environment.yml"


def run_dirs():
    return [sweep.run_dir(RES, **r) for r in RUNS]


def _local_exec():
    try:
        return bool(workflow.local_exec)
    except Exception:
        return True


def gpu_slots_plan():
    """The GPU slots of a local GPU sweep (plan.gpu_slots), applied: this process pinned to
    the other cores, the `gpu` and `ncu_counters` resources registered unless --resources
    gave them."""
    try:
        p = gpu_slots.plan(CFG, MACHINE.device, os.sched_getaffinity(0), local=_local_exec(),
                           regenerate=REGENERATE, main_process=workflow.is_main_process)
    except sweep.ConfigError as e:
        sys.exit(f"fusionlab: {e}")
    if p is None:
        return None
    slots.pin_process(p.other_cpus)
    if "gpu" not in workflow.global_resources:  # --resources gpu=N on the command line wins
        workflow.register_resource("gpu", p.in_flight)
    if "ncu_counters" not in workflow.global_resources:
        workflow.register_resource("ncu_counters", p.ncu_in_flight)
    g = workflow.global_resources["gpu"]
    n = workflow.global_resources["ncu_counters"]
    print(f"fusionlab: {p.describe(getattr(g, 'value', g), getattr(n, 'value', n))}", file=sys.stderr)
    return p.slots


SLOTS = gpu_slots_plan()


def measure_threads():
    """CPU runs: a measurement takes every local core, so nothing runs beside it (CPU
    kernels use them all). GPU runs with slots: one (the job's measuring happens on its
    GPU slot's own cores, outside Snakemake's count). On a cluster the profile's
    set-threads decides."""
    if SLOTS:
        return 1
    try:
        return workflow.cores
    except Exception:  # no --cores: cluster execution
        return 1


TABLE_NAMES = {
    "runs": "runs.csv",
    "runs_pq": "runs.parquet",
    "long": "metrics_long.csv",
    "long_pq": "metrics_long.parquet",
    "speedups": "speedups.csv",
    "crossover": "crossover.csv",
    "kernels": "kernels.csv",
}
TABLES = {k: f"{RES}/tables/{v}" for k, v in TABLE_NAMES.items()}
COSTS = f"{RES}/tables/costs.csv"
PEAKS = f"{RES}/device/peaks.json"
SUMMARY = f"{RES}/summary.md"
FUSION_MAP = f"{RES}/figures/fusion_map.html"
# regenerating from results copied without the device measurement: no roofline ceilings
PEAKS_INPUT = [] if (REGENERATE and not os.path.exists(PEAKS)) else PEAKS


def runner_args(wildcards):
    """The runner's arguments, a list (each word quoted in the shell command: {params.args:q})."""
    args = ["--model", wildcards.model, "--variant", wildcards.variant, "--batch", wildcards.batch,
            "--size", sizes.from_suffix(wildcards.size), "--mode", wildcards.mode, "--dtype", wildcards.dtype,
            "--repeat", wildcards.repeat, "--warmup", CFG["warmup_iters"], "--warmup-min-s", CFG["warmup_min_s"],
            "--iters", CFG["measure_iters"], "--device", MACHINE.device, "--compile-mode", CFG["compile_mode"],
            "--optimizer", CFG["optimizer"], "--timeout", sweep.timeout_s(CFG, wildcards.variant),
            "--windows", CFG["timing_windows"], "--pin-cpus", CFG["pin_cpus"]]
    if wildcards.model in CFG["import_models"]:
        args += ["--model-from", json.dumps(CFG["import_models"][wildcards.model], sort_keys=True)]
    if CFG["paired_eager"]:
        args += ["--paired-eager", "--paired-ci", CFG["paired_ci"], "--timing-max-s", CFG["timing_max_s"]]
    if CFG["compile_debug"]:
        args += ["--compile-debug", f"{RUN.format(**wildcards)}/compile_debug"]
    if SLOTS:
        args += ["--slots", slots.format_slots(SLOTS)]
    return [str(a) for a in args]


def _skip_reasons():
    """run folder -> why it is not profiled (statically unsupported on this device)."""
    if REGENERATE:
        return {sweep.run_dir(RES, **r): "recorded as unsupported" for r in RUNS if r["skipped"]}
    skipped = {}
    for r in RUNS:
        why = sweep.unsupported_reason(r, MACHINE.device)
        if why:
            skipped[sweep.run_dir(RES, **r)] = why
    return skipped


SKIPPED = _skip_reasons()
# the runs kept without their Nsight report (restored from a pack, plan.restore): the sweep
# goes on from their records (metrics.json, kernels.csv, attribution.csv as they are) and
# neither profiles nor exports them again
RECORDED = (set() if REGENERATE or MACHINE.profiler != "nsys"
            else {d for d in run_dirs() if d not in SKIPPED and restore.recorded_without_profile(d)})
# a run recorded with other size axes than its model has now (a factory's argument renamed)
# is measured again: its sizes would be columns no other run has
_MODEL_OF = {sweep.run_dir(RES, **r): r["model"] for r in RUNS}
_OTHER_AXES = {d: restore.other_axes(d, catalog.sizes(_MODEL_OF[d])) for d in sorted(RECORDED)}
_OTHER_AXES = {d: a for d, a in _OTHER_AXES.items() if a is not None}
RECORDED -= set(_OTHER_AXES)
if _OTHER_AXES and workflow.is_main_process:
    _d, _a = next(iter(_OTHER_AXES.items()))
    print(f"fusionlab: {len(_OTHER_AXES)} restored run(s) recorded with other size axes than their model's now, "
          f"measured again (first: {_d}, axes {', '.join(_a) or 'none'})", file=sys.stderr)
if RECORDED and workflow.is_main_process:
    print(f"fusionlab: {len(RECORDED)} run(s) kept without their Nsight report (restored): their records are "
          f"taken as they are, not measured again", file=sys.stderr)
    _other = restore.other_gpu(sorted(RECORDED), machine.gpu_names()) if MACHINE.device == "cuda" else None
    if _other:
        sys.exit(printable(f"fusionlab: {_other[0]} was recorded on {_other[1]}, not on this machine's GPU "
                           f"({', '.join(sorted(machine.gpu_names()))}): a sweep goes on from records of its own "
                           f"GPU model only (restore them into another results folder)"))
# nsys options and runner flag of the capture range: on the GPU nsys traces only the
# measured range (cudaProfilerStart/Stop); a CPU-only run has no CUDA API to open it
NSYS_CAPTURE = ((["--capture-range=cudaProfilerApi", "--capture-range-end=stop"], ["--capture-range"])
                if MACHINE.device == "cuda" else ([], []))


def profiled_run_dirs():
    return [d for d in run_dirs() if d not in SKIPPED]


def exported_run_dirs():
    """The profiled runs whose Nsight report is there or yet to be made (not RECORDED)."""
    return [d for d in profiled_run_dirs() if d not in RECORDED]


def profile_input(wildcards):
    d = RUN.format(**wildcards)
    if d in SKIPPED:
        return {"run": f"{d}/{sweep.UNSUPPORTED_FILE}"}
    if wildcards.backend == "nsys":
        inputs = {"run": f"{d}/run.json", "profile": f"{d}/report.sqlite", "timing": f"{d}/timing.json"}
        if d in RECORDED:   # no report to export: its files made from one stay as recorded
            del inputs["profile"]
        if (REGENERATE or d in RECORDED) and not os.path.exists(inputs["timing"]):
            # recorded before untraced timing existed: no untraced wall time (never a traced one)
            del inputs["timing"]
        return inputs
    return {"run": f"{d}/run.json", "profile": f"{d}/trace.json"}


# the device the runs ran on: regenerating, the recorded runs' (GPU results regenerated on a laptop)
RUNS_DEVICE = sweep.recorded_device(profiled_run_dirs()) if REGENERATE else MACHINE.device
# regenerating: the configurations the config asks for that no recorded run covers (headline.csv
# gives each a row of status "not run"; the summary, the headline figure and the suite read it there)
NOT_RECORDED = progress.not_recorded(CFG, MACHINE.profiler, RUNS, RUNS_DEVICE) if REGENERATE else []


# Nsight Compute's step (ncu.smk): plan.ncu_plan's plain data

NCU = ncu_plan.plan(CFG["ncu"], RUNS_DEVICE, BACKEND, REGENERATE, None if REGENERATE else sweep.ncu_path(),
                    profiled_run_dirs(),
                    ncu_plan.survey([d for d in profiled_run_dirs() if os.path.basename(d) == "r0"])
                    if REGENERATE else None)
if workflow.is_main_process:
    for message in NCU["messages"]:
        print(f"fusionlab: {message}", file=sys.stderr)


# the report's figures (plots.smk): only where the sweep has data for them
HEADLINE = f"{RES}/tables/headline.csv"  # analysis.sweep.headline
SUMMARY_HTML = f"{RES}/summary.html"
FIGURE_PLAN = report_figures.plan(
    [dict(r, sizes=sizes.parse(r["size"]), skipped=r.get("skipped") or sweep.run_dir(RES, **r) in SKIPPED)
     for r in RUNS], RUNS_DEVICE, BACKEND, kernel_roofline="roofline" in NCU["passes"] and bool(NCU["traffic"]))


def figure_scopes(fig):
    """The files of figure fig in this sweep: the models (or "all") it has data for."""
    return report_figures.scopes(fig, FIGURE_PLAN)


def figure_files(fig):
    return [f"{RES}/figures/{fig}/{s}.{ext}" for s in figure_scopes(fig) for ext in ("png", "svg")]


def figure_caption(path):
    """The caption file of a figure for Snakemake's report, which renders it as a Jinja
    template and then as reStructuredText: the results folder's own caption only where it
    is what the figure job writes (captions.is_safe: no template or markup syntax), else
    the project's note that it was withheld. Nothing in a results folder is templated."""
    if os.path.exists(path):
        try:
            with open(path, encoding="utf-8") as f:
                safe = report_captions.is_safe(f.read())
        except (OSError, UnicodeDecodeError):
            safe = False
        if not safe:
            return os.path.join(ROOT, "workflow", "report", "caption_withheld.rst")
    return os.path.abspath(path)


def recorded_costs():
    """Regenerating: the costs table already written, read before the rule runs (a
    configuration that cannot be counted on this machine keeps its recorded row)."""
    if not (REGENERATE and os.path.exists(COSTS)):
        return []
    import csv
    with open(COSTS) as f:
        return list(csv.DictReader(f))


def every_gpu_job():
    """The `gpu` resource of the whole sweep (--resources gpu=N, else every GPU slot's
    jobs_per_gpu): a job that takes it all runs alone on the GPUs."""
    g = workflow.global_resources["gpu"] if "gpu" in workflow.global_resources else None
    g = getattr(g, "value", g)
    return int(g) if g else max(1, len(sweep.gpu_indices(CFG["gpus"])) * CFG["jobs_per_gpu"])


def sweep_ends():
    """At the sweep's end (onsuccess, onerror): its lock released, and on a GPU its gate
    registration dropped and anything the gate still holds stopped continued
    (jobs/host_gate.py)."""
    sweep_lock.release(RES)
    if workflow.is_main_process and not REGENERATE and MACHINE.device == "cuda":
        host_gate.unregister_sweep()
        host_gate.resume_if_idle(host_gate.gate_dir())


def timeline_runs(model):
    """The runs of model's timeline: eager, then each other variant, at its largest batch of
    the first setting (mode and dtype), default sizes, first repeat; [] where there is no
    eager run there or nothing beside it, or the profiles are not nsys's."""
    rs = [r for r in RUNS if r["model"] == model and not r.get("skipped") and r["backend"] == "nsys"
          and int(r["repeat"]) == 0 and r["size"] == ""]
    if not rs:
        return []
    mode, dtype = sorted({(r["mode"], r["dtype"]) for r in rs})[0]
    rs = [r for r in rs if (r["mode"], r["dtype"]) == (mode, dtype)]
    batch = max(int(r["batch"]) for r in rs)
    here = {r["variant"]: r for r in rs if int(r["batch"]) == batch}
    if "eager" not in here or len(here) < 2:
        return []
    return [here["eager"]] + [here[v] for v in sorted(here) if v != "eager"]
