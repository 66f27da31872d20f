"""Per-NVTX-range metrics of any nsys report (or torch.profiler trace), as JSON.

    python -m fusionlab.analysis report.sqlite            # nsys SQLite export
    python -m fusionlab.analysis report.nsys-rep          # exported to SQLite first (needs nsys)
    python -m fusionlab.analysis trace.json               # torch.profiler Chrome trace
    python -m fusionlab.analysis diff A B                 # kernel diff of two runs (run folders or profiles)
    python -m fusionlab.analysis compare RES_A RES_B --out DIR   # two sweeps: compare.csv + figure

Prints one object per range name ("domain:name") with the metrics of analysis.run.metrics
under both attribution rules, labelled: "process" (every kernel the range's process
launched while the range was open: autograd's backward thread, CUDA graph replays) and
"same_thread" (nsys's nvtx_gpu_proj rule: only the range's own thread). The two differ
where other threads launch work; the pipeline's own numbers use "process".
An nsys export is read in one streamed pass (analysis.run.stream): about 3 s and 150 MB for
a million kernels (benchmarks/million_kernels.py).
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

from fusionlab.analysis.run import metrics
from fusionlab.analysis.run.run_metrics import load_profile
from fusionlab.analysis.readers.trace import ReportError


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
    """Every range's metrics under both attributions (module doc), as printed."""
    if not os.path.exists(path):
        raise ReportError(f"{path}: no such file")
    if path.endswith(".nsys-rep"):
        with tempfile.TemporaryDirectory() as d:
            return analyse_profile(path, load_profile(export_sqlite(path, os.path.join(d, "report.sqlite"))))
    return analyse_profile(path, load_profile(path))


def analyse_profile(path: str, trace) -> dict:
    """analyse() of an opened profile (a streamed nsys export or a Trace): one pass."""
    views, _ = metrics.views(trace)
    out = {name: {a: metrics.clean(m) for a, m in v.items()} for name, v in views.items()}
    return {"file": path, "backend": trace.backend, "device": trace.device,
            "tool_version": trace.tool_version, "gpu": trace.gpu,
            "attribution": {"process": "kernels launched by any thread of the range's process while it was open",
                            "same_thread": "kernels launched by the range's own thread (nsys nvtx_gpu_proj_trace)"},
            "ranges": out}


def main_diff(argv) -> int:
    from fusionlab.analysis.report.compare import run_kernels
    from fusionlab.analysis.run.fusion import kernel_diff
    p = argparse.ArgumentParser(prog="python -m fusionlab.analysis diff",
                                description="kernel-by-kernel diff of two runs (HTA TraceDiff classes)")
    p.add_argument("a"); p.add_argument("b")
    p.add_argument("--csv", help="write the diff table here too")
    a = p.parse_args(argv)
    d = kernel_diff(run_kernels(a.a), run_kernels(a.b))
    if a.csv:
        d.to_csv(a.csv, index=False)
    show = d.assign(kernel=d.iloc[:, 0].str.slice(0, 70)).drop(columns=d.columns[0])
    print(show.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    return 0


def main_compare(argv) -> int:
    from fusionlab.analysis.report.compare import main_compare as run
    p = argparse.ArgumentParser(prog="python -m fusionlab.analysis compare", description="compare two sweeps")
    p.add_argument("a", help="results folder of sweep A"); p.add_argument("b", help="results folder of sweep B")
    p.add_argument("--out", default="compare", help="output folder (compare.csv, compare.png/svg)")
    a = p.parse_args(argv)
    m = run(a.a, a.b, a.out)
    cols = ["model", "variant", "batch", "wall_time_per_iter_ms_a", "wall_time_per_iter_ms_b", "time_ratio_wall",
            "speedup_wall_a", "speedup_wall_b", "speedup_paired_a", "speedup_paired_b"]
    print(m[cols].to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    print(f"wrote {a.out}/compare.csv and compare.png/svg")
    return 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    sub = {"diff": main_diff, "compare": main_compare}
    if argv and argv[0] in sub:
        try:
            return sub[argv[0]](argv[1:])
        except ReportError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
    p = argparse.ArgumentParser(prog="python -m fusionlab.analysis", description=__doc__.split("\n\n")[0])
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
