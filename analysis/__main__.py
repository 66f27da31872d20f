"""Per-NVTX-range metrics of any nsys report (or torch.profiler trace), as JSON.

    python -m analysis report.sqlite            # nsys SQLite export
    python -m analysis report.nsys-rep          # exported to SQLite first (needs nsys)
    python -m analysis trace.json               # torch.profiler Chrome trace

Prints one object per range name ("domain:name"), with the metrics of analysis.metrics.
A file that cannot be analysed gives a one-line reason and exit status 2.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

from analysis import metrics
from analysis.run_metrics import load_profile
from analysis.trace import ReportError


def export_sqlite(rep: str, out: str) -> str:
    if not shutil.which("nsys"):
        raise ReportError(f"{rep}: reading a .nsys-rep needs nsys on PATH to export it "
                          "(or pass the .sqlite from `nsys export --type sqlite`)")
    proc = subprocess.run(["nsys", "export", "--type", "sqlite", "--force-overwrite", "true",
                           "-o", out, rep], capture_output=True, text=True)
    if proc.returncode != 0 or not os.path.exists(out):
        last = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise ReportError(f"{rep}: nsys export failed ({last[0][:200]})")
    return out


def analyse(path: str) -> dict:
    if not os.path.exists(path):
        raise ReportError(f"{path}: no such file")
    if path.endswith(".nsys-rep"):
        with tempfile.TemporaryDirectory() as d:
            trace = load_profile(export_sqlite(path, os.path.join(d, "report.sqlite")))
    else:
        trace = load_profile(path)
    out = {k: metrics.clean(v) for k, v in metrics.all_range_metrics(trace).items()}
    return {"file": path, "backend": trace.backend, "device": trace.device,
            "tool_version": trace.tool_version, "gpu": trace.gpu, "ranges": out}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m analysis", description=__doc__.split("\n\n")[0])
    p.add_argument("report", nargs="+", help=".sqlite, .nsys-rep or torch trace .json")
    a = p.parse_args(argv)
    status = 0
    for path in a.report:
        try:
            print(json.dumps(analyse(path), indent=2))
        except ReportError as e:
            print(f"error: {e}", file=sys.stderr)
            status = 2
    return status


if __name__ == "__main__":
    sys.exit(main())
