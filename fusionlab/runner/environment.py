"""The software and hardware a run used: tool versions, the GPU and the cores."""
from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess


def tool_version(cmd: list[str]) -> str | None:
    """The first line a tool prints for `cmd` (e.g. `nsys --version`); None when the tool
    is missing or fails."""
    if not shutil.which(cmd[0]):
        return None
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip()
        return out.splitlines()[0] if out else None
    except (OSError, subprocess.SubprocessError):
        return None


def versions(torch, device: str, profiler: str) -> dict:
    """run.json's versions: Python, torch, CUDA, Triton, the driver, nsys, host and CPU."""
    v = {"python": platform.python_version(), "torch": torch.__version__,
         "cuda": torch.version.cuda, "triton": None, "driver": None,
         "nsys": tool_version(["nsys", "--version"]) if profiler == "nsys" else None,
         "host": platform.node(), "cpu": platform.processor() or platform.machine()}
    try:
        import triton
        v["triton"] = triton.__version__
    except Exception:  # triton is optional on CPU machines
        pass
    if device == "cuda":
        v["driver"] = driver_version()
    return v


def driver_version() -> str | None:
    """The NVIDIA driver's version, from the kernel module (no nvidia-smi process: that
    costs about a second per run), else from nvidia-smi."""
    try:
        with open("/proc/driver/nvidia/version") as f:
            m = re.search(r"Kernel Module(?: for \w+)?\s+([0-9][0-9.]+)", f.read())
        if m:
            return m.group(1)
    except OSError:
        pass
    return tool_version(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])


def gpu_name(torch, device: str) -> str | None:
    """The GPU's name, or None for a CPU run (or a GPU torch cannot see)."""
    return torch.cuda.get_device_name(0) if (device == "cuda" and torch.cuda.is_available()) else None


def gpu_identity(torch, device: str) -> dict:
    """Which GPU and cores this process used: the GPU's index as CUDA_VISIBLE_DEVICES
    named it (its first entry; "0" when unset), its UUID, and this process's cores."""
    out = {"cpus_used": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None}
    if device == "cuda" and torch.cuda.is_available():
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        out["gpu_index"] = visible.split(",")[0] if visible else "0"
        out["gpu_uuid"] = str(torch.cuda.get_device_properties(0).uuid)
        out["cuda_visible_devices"] = visible
        out["slurm_job_id"] = os.environ.get("SLURM_JOB_ID")
    return out
