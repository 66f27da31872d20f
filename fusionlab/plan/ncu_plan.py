"""The Nsight Compute step's plan for one sweep, as plain data (the Snakefile builds its
rules from it): whether the step runs and why not, which run folders get an ncu process,
which passes (core.ncu_passes) with which options, and which traffic files the tables read.

plan() decides from what it is given; survey() is the one look at the disk, for
regenerating: what each repeat-0 folder holds (its file names and its ncu.json).
"""
from __future__ import annotations

import os

from fusionlab.core import ncu_passes
from fusionlab.core.io import read_json


def passes(cfg: dict) -> list[str]:
    """The passes the config asks for, in the step's order (steady always first: its
    status is the step's)."""
    want = set(cfg.get("passes") or ncu_passes.DEFAULT) | {"steady"}
    return [p for p in ncu_passes.ORDER if p in want]


def top_kernels(cfg: dict) -> int:
    """How many kernel names the step profiles, those that carry the most time in the
    run's nsys kernel table (kernels.csv); 0: every kernel."""
    return int(cfg.get("top_kernels") or 0)


def options(cfg: dict) -> list[str]:
    """The options of the step's command (jobs.ncu_step.main)."""
    share = float(cfg.get("top_share") or 0)
    top = (["--top-kernels", str(top_kernels(cfg))] + (["--top-share", f"{share:g}"] if share else [])
           if top_kernels(cfg) else [])
    return ["--passes", ",".join(passes(cfg)), "--iters", str(cfg.get("iters", 3)),
            "--warmup", str(cfg.get("warmup_iters", 5)), "--timeout", str(cfg.get("timeout_s", 900)), *top]


def _steady_record(step: dict) -> tuple[str, dict]:
    """(the report the step's bytes are read from, its record), for this step's ncu.json
    and for those written with one multi-pass report (`kernel`) or a `bytes` pass."""
    for key, report in (("steady", ncu_passes.PASSES["steady"].report), ("bytes", "ncu_bytes.ncu-rep"),
                        ("kernel", ncu_passes.PASSES["roofline"].report)):
        if key in step:
            rec = step.get(key) or {}
            return rec.get("report") or report, rec
    return ncu_passes.PASSES["steady"].report, {}


def reports_missing(files: set, step: dict | None) -> bool:
    """A folder whose step ended ok but whose bytes report is not among its files
    (results copied without their .ncu-rep files: tens of MB a run)."""
    if not step or step.get("status") != "ok":
        return False
    return _steady_record(step)[0] not in files


def survey(run_dirs: list[str]) -> dict:
    """run folder -> {"files": its file names, "step": its ncu.json or None}."""
    out = {}
    for d in run_dirs:
        try:
            files = set(os.listdir(d))
        except OSError:
            files = set()
        step = read_json(os.path.join(d, ncu_passes.STEP_FILE)) if ncu_passes.STEP_FILE in files else None
        out[d] = {"files": files, "step": step}
    return out


def plan(cfg: dict, device: str | None, backend: str, regenerate: bool, ncu: str | None,
         run_dirs: list[str], found: dict | None = None) -> dict:
    """The step's plan (module doc). cfg: the config's `ncu` section; device and backend:
    the runs'; ncu: the ncu found on this machine (None: none); run_dirs: the profiled run
    folders; found: survey() of them where regenerating. Returns
      ncu: the command to run (None: the step does not profile here),
      off: why nothing is measured (None where something is, or may be, read),
      passes, options: what the step runs and its command's options,
      top_kernels: the kernel names each run profiles (0: every kernel; else the step
        needs the run's kernels.csv),
      profile: the folders that get an ncu process,
      traffic: the folders whose traffic files the tables read,
      kept: those of them whose traffic files are used as they are (reports not copied),
      lost: folders whose measured traffic is gone,
      inputs: the traffic files the tables read,
      note: the tables' note where no run has measured traffic,
      messages: what the sweep says about it on start."""
    r0 = [d for d in run_dirs if os.path.basename(d) == "r0"]
    out = {"ncu": None, "off": None, "passes": passes(cfg), "options": options(cfg),
           "top_kernels": top_kernels(cfg), "profile": [],
           "traffic": [], "kept": [], "lost": [], "inputs": [], "note": None, "messages": []}
    want = cfg.get("enabled", "auto")
    if want is False:
        out["off"] = "turned off (config key ncu.enabled: false)"
    elif device != "cuda" or backend != "nsys":
        out["off"] = f"no GPU profiling here (device {device}, profiler {backend})"
    elif regenerate:
        found = found or {}
        dirs = [d for d in r0 if (found.get(d) or {}).get("step") is not None]
        has = {d: ncu_passes.RUN_FILE in found[d]["files"] for d in dirs}
        missing = {d: reports_missing(found[d]["files"], found[d]["step"]) for d in dirs}
        kept = [d for d in dirs if has[d] and missing[d]]
        lost = [d for d in dirs if (missing[d] and not has[d]) or (kept and not has[d])]
        out.update(traffic=[d for d in dirs if d not in lost], kept=kept, lost=lost)
        if lost:
            out["messages"].append(f"{len(lost)} run folder(s) have no {ncu_passes.RUN_FILE} and none can be read "
                                   f"here (.ncu-rep reports not copied): their measured columns stay empty ('not run')")
        if kept:
            out["messages"].append(f"{len(kept)} run folder(s) have no .ncu-rep report: their measured traffic "
                                   f"({ncu_passes.RUN_FILE}, {ncu_passes.KERNEL_FILE}) is used as it is, not read again")
    elif ncu is None and want == "auto":
        out["off"] = "no Nsight Compute (ncu) on PATH or in the CUDA toolkit's bin folder"
    else:
        out.update(ncu=ncu or "ncu", profile=r0, traffic=r0)
    out["inputs"] = [f"{d}/{ncu_passes.RUN_FILE}" for d in out["traffic"]]
    if not out["inputs"]:
        out["note"] = out["off"] or (f"no run folder holds the Nsight Compute step's record ({ncu_passes.STEP_FILE})"
                                     if regenerate
                                     else "no run profiled under Nsight Compute")
    return out
