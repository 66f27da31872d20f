"""The machine a sweep runs on: its GPUs, Nsight Systems and Nsight Compute found, and
the device and profiler picked for a config (a Machine); for a regenerate, the machine
the recorded runs name.
"""
from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass

from fusionlab.core.io import read_json
from fusionlab.plan.config_checks import ConfigError
from fusionlab.plan.runs import metrics_only


def gpu_visible() -> bool:
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return False
    if shutil.which("nvidia-smi"):
        try:
            return subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=30).returncode == 0
        except (OSError, subprocess.SubprocessError):
            return False
    return os.path.exists("/dev/nvidia0")


def gpu_indices(spec: str = "auto") -> list[str]:
    """The GPUs a sweep may use, as CUDA_VISIBLE_DEVICES names them: the configured list,
    or (auto) the visible ones: CUDA_VISIBLE_DEVICES when set, else every GPU nvidia-smi
    lists. Raise ConfigError for a configured GPU that is not visible."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible not in (None, ""):
        found = [g.strip() for g in visible.split(",") if g.strip()]
    else:
        found = []
        if shutil.which("nvidia-smi"):
            try:
                out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30).stdout
                found = [str(i) for i, line in enumerate(l for l in out.splitlines() if l.startswith("GPU "))]
            except (OSError, subprocess.SubprocessError):
                pass
        found = found or ["0"]
    if spec == "auto":
        return found
    want = [g for g in spec.split(",")]
    missing = [g for g in want if g not in found]
    if missing:
        raise ConfigError(f"config key gpus: {spec!r} names GPU(s) {', '.join(missing)} that are not visible; "
                          f"allowed values: auto, or a list of {', '.join(found)}")
    return want


def gpu_names() -> set[str]:
    """The names of the GPUs nvidia-smi lists ('NVIDIA H100 80GB HBM3'); none without it."""
    if not shutil.which("nvidia-smi"):
        return set()
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return set()
    return {line.strip() for line in out.splitlines() if line.strip()}


def nsys_version() -> str | None:
    """The version of the nsys on PATH ('2025.3.1.90'), or None if there is none."""
    if not shutil.which("nsys"):
        return None
    try:
        out = subprocess.run(["nsys", "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"(\d{4}\.\d+(?:\.\d+)*)", out)
    return m.group(1) if m else None


def _vtuple(v: str) -> tuple:
    return tuple(int(x) for x in re.findall(r"\d+", v))


@dataclass(frozen=True)
class Machine:
    device: str        # cuda | cpu
    profiler: str      # nsys | torch
    nsys: str | None   # version found
    note: str          # one line for the log: what was picked and why


MACHINE_ENV = "FUSIONLAB_MACHINE"


def machine_to_env(machine: Machine) -> str:
    """The machine as the main Snakemake process found it, for its jobs' own processes
    (machine_from_env): JSON."""
    return json.dumps(dataclasses.asdict(machine))


def machine_from_env(text: str) -> Machine:
    """The inverse of machine_to_env: a job's process (Snakemake parses the workflow again
    in each one) takes the main process's machine instead of running nvidia-smi and nsys
    again, a second or two of CPU per job beside the measurements."""
    return Machine(**json.loads(text))


def resolve(cfg: dict, gpu: bool | None = None, nsys: str | None | bool = False) -> Machine:
    """Pick device and profiler for this machine. Raise ConfigError if the config asks
    for what the machine lacks (nsys missing or too old, cuda without a GPU)."""
    gpu = gpu_visible() if gpu is None else gpu
    nsys = nsys_version() if nsys is False else nsys
    device = cfg["device"] if cfg["device"] != "auto" else ("cuda" if gpu else "cpu")
    if device == "cuda" and not gpu:
        raise ConfigError("config key device: 'cuda' but no GPU is visible on this machine "
                          "(nvidia-smi -L failed); allowed values: auto, cuda, cpu")
    want = cfg["profiler"]
    minv = cfg["nsys"]["min_version"]
    nsys_ok = nsys is not None and _vtuple(nsys) >= _vtuple(minv)
    if want == "nsys" and not nsys_ok:
        found = f"found nsys {nsys}" if nsys else "no nsys on PATH"
        raise ConfigError(f"config key profiler: 'nsys' needs Nsight Systems >= {minv}, {found}; "
                          "install it (README: Nsight Systems) or set profiler: torch")
    if want == "auto":
        profiler = "nsys" if (nsys_ok and device == "cuda") else "torch"
        why = ("nsys and a GPU found" if profiler == "nsys" else
               f"{'no GPU' if device == 'cpu' else 'no usable nsys'}: torch.profiler fallback, CPU numbers only"
               if device == "cpu" or not nsys_ok else "")
    else:
        profiler, why = want, "as configured"
    return Machine(device, profiler, nsys, f"fusionlab: device={device} profiler={profiler} "
                   f"(nsys {nsys or 'not found'}; {why})")


def recorded_machine(cfg: dict, found: list[dict]) -> Machine:
    backends = sorted({r["backend"] for r in found})
    if len(backends) > 1:
        raise ConfigError(f"config key results: {cfg['results']} mixes backends {backends}; "
                          "regenerate one at a time (separate results folders)")
    note = (f"fusionlab: regenerating from {len(found)} recorded {backends[0]} runs in "
            f"{cfg['results']} (no profiling)")
    if metrics_only(found):
        n = sum(r["metrics_only"] for r in found)
        note += (f"; {n} without their profile (not copied): every run's metrics.json is used "
                 "as it is, only tables, figures and summary are made again")
    return Machine("recorded", backends[0], None, note)


def recorded_device(run_dirs: list[str]) -> str | None:
    """The device the recorded runs ran on: the first run.json that names one."""
    for d in run_dirs:
        try:
            device = (read_json(os.path.join(d, "run.json")) or {}).get("device")
        except (OSError, ValueError):
            continue
        if device:
            return device
    return None


CUDA_NCU = os.path.join(os.sep, "usr", "local", "cuda", "bin", "ncu")   # the CUDA toolkit's default place


def ncu_path() -> str | None:
    """Nsight Compute's command line: on PATH, else in the CUDA toolkit's default place, else None."""
    return shutil.which("ncu") or (CUDA_NCU if os.path.exists(CUDA_NCU) else None)
