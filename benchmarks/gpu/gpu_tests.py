"""The GPU-only tests, on a GPU machine, and the record of their last pass:

    python benchmarks/gpu/gpu_tests.py      # (benchmarks/gpu/gpu_tests.sh)

Runs GPU_TESTS (the hand-written kernels against eager, their gradients, the seed kernels'
unsupported dtypes) in one pytest process. The tests that run the Triton kernels in Triton's
interpreter are CPU tests: CI runs them (every launch-knob combination in the slow tier), so
they are deselected here (NOT_HERE), whatever Triton the GPU machine has. A pass is every one of
them run and passed: a failure, an error or a skip (a GPU test skipped on a GPU machine did
not run) fails the command, and the record is left as it was. On a pass it writes RECORD:
the date, the commit (and whether the tree had changes), the GPU, its driver, CUDA, torch,
Triton, Python, and the tests' counts.
"""
from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RECORD = os.path.join(ROOT, "benchmarks", "results", "gpu-tests", "last-pass.json")
GPU_TESTS = ["tests/test_kernels.py", "tests/test_kernel_grads.py",
             "tests/test_zoo.py::test_unsupported_dtype_of_seed_kernel_is_unsupported_not_error"]
NOT_HERE = "not in_the_interpreter"   # -k: the Triton interpreter's tests, which run on the CPU in CI


def _out(cmd: list[str]) -> str | None:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=ROOT).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def machine() -> dict:
    """The GPU, driver and libraries the tests ran on."""
    import torch
    try:
        import triton
        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    smi = _out(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"]) or ""
    return {"gpu": torch.cuda.get_device_name(0), "gpus": torch.cuda.device_count(),
            "driver": smi.splitlines()[0].split(",")[-1].strip() if smi else None,
            "cuda": torch.version.cuda, "torch": torch.__version__, "triton": triton_version,
            "python": platform.python_version(), "host": platform.node()}


def counts(junit: str) -> dict:
    """passed, failed, errors, skipped (with the skipped tests' ids) of a JUnit XML file."""
    root = ET.parse(junit).getroot()
    cases = root.iter("testcase")
    out = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0, "skipped_tests": []}
    for c in cases:
        if c.find("failure") is not None:
            out["failed"] += 1
        elif c.find("error") is not None:
            out["errors"] += 1
        elif c.find("skipped") is not None:
            out["skipped"] += 1
            out["skipped_tests"].append(f"{c.get('classname')}::{c.get('name')}")
        else:
            out["passed"] += 1
    return out


def main() -> int:
    import torch
    if not torch.cuda.is_available():
        print("gpu_tests: no GPU here (torch.cuda.is_available() is False): nothing run, nothing recorded",
              file=sys.stderr)
        return 2
    junit = os.path.join(ROOT, "results", "gpu-tests.xml")
    os.makedirs(os.path.dirname(junit), exist_ok=True)
    env = dict(os.environ)
    t0 = time.monotonic()
    rc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-rs", "-m", "", "-k", NOT_HERE,
                         f"--junitxml={junit}", *GPU_TESTS],
                        cwd=ROOT, env=env).returncode
    seconds = round(time.monotonic() - t0, 1)
    c = counts(junit) if os.path.exists(junit) else {}
    ok = rc == 0 and c and not c["failed"] and not c["errors"] and not c["skipped"] and c["passed"] > 0
    if not ok:
        print(f"gpu_tests: not a pass (pytest exit {rc}, {json.dumps(c)}): {os.path.relpath(RECORD, ROOT)} "
              "left as it was", file=sys.stderr)
        return 1
    # a copy of a checkout without its history (a lent GPU machine's): the commit it was
    # copied from, given as FUSIONLAB_COMMIT
    commit = os.environ.get("FUSIONLAB_COMMIT") or _out(["git", "rev-parse", "HEAD"])
    dirty = False if os.environ.get("FUSIONLAB_COMMIT") else bool(
        _out(["git", "status", "--porcelain", "--untracked-files=no"]))
    rec = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "commit": commit, "tree_changed": dirty, **machine(), "tests": GPU_TESTS, "deselected": NOT_HERE,
           "passed": c["passed"], "seconds": seconds}
    os.makedirs(os.path.dirname(RECORD), exist_ok=True)
    with open(RECORD, "w") as f:
        json.dump(rec, f, indent=1)
        f.write("\n")
    print(json.dumps(rec))
    return 0


if __name__ == "__main__":
    sys.exit(main())
