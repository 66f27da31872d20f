"""Per-range metrics of any nsys report or torch.profiler trace: a table on a terminal,
else JSON (--json forces it, --csv gives CSV).

    python -m fusionlab.analysis report.sqlite            # nsys SQLite export
    python -m fusionlab.analysis report.nsys-rep          # exported to SQLite first (needs nsys)
    python -m fusionlab.analysis trace.json[.gz]          # torch.profiler Chrome trace (gzipped or not)
    python -m fusionlab.analysis A B C --csv              # several: one CSV (every file's columns, a file
                                                          # column); --json: one JSON array of documents
    python -m fusionlab.analysis diff A B                 # kernel diff of two runs (run folders or profiles)
    python -m fusionlab.analysis compare RES_A RES_B --out DIR   # two sweeps: compare.csv + figure

Prints one object per range name ("domain:name") with the metrics of analysis.run.metrics
under both attribution rules, labelled: "process" (every kernel the range's process
launched while the range was open: autograd's backward thread, CUDA graph replays) and
"same_thread" (nsys's nvtx_gpu_proj rule: only the range's own thread). The two differ
where other threads launch work; the pipeline's own numbers use "process".
An nsys export read columnar (readers.nsys_pass, with ADBC installed) is analysed in one pass over its
kernels in start order, memory bounded by its ranges, kernel names, streams and launch
calls (analysis.run.single_pass: ranges, projections, (whole report) and its per-device
and per-stream breakdowns); otherwise (a torch trace, the sqlite3 reader) the ranges'
metrics, the projections and (whole report) each take a pass (analysis.run.stream,
projection, whole) and the breakdowns hold every GPU activity in memory (readers.gpu_ops).
benchmarks/analyse_vs_baseline.py measures time and memory.
Every range also gets its GPU-side projection and the busy and idle shares over the
window that holds its work (analysis.run.projection: a range that only launches work is
judged over the work, not over its CPU-side span). `(whole report)` is the whole
profile's GPU activity, always present where there are kernels and the only entry of a
profile without ranges (analysis.run.whole), with its top kernels and HTA's temporal and
per-stream idle breakdowns. A torch.profiler trace's ranges are its ProfilerStep#N steps
(one range, `ProfilerStep`) and its record_function annotations (readers.torch_trace).
docs/analyse.md describes the output.
A file that cannot be analysed gives a one-line reason and exit status 2. What is printed
for a terminal (the table, diff's and compare's tables, errors) shows a control character
in a name as its escape (core.io.printable); JSON escapes them itself and CSV keeps them.
"""
from __future__ import annotations

import dataclasses
import json
import os
import sys


def _one_blas_thread() -> None:
    """numpy's BLAS with one thread unless the environment names a number: analysis does no
    matrix products, and OpenBLAS starts a thread per core when numpy loads, each spinning
    about 0.1 s of CPU time before it sleeps (6 s of CPU on a 64-core host). Set only while
    numpy loads (nothing where it is loaded already), so that child processes (nsys export)
    see the caller's environment."""
    if "numpy" in sys.modules:
        return
    unset = [n for n in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS") if n not in os.environ]
    os.environ.update({n: "1" for n in unset})
    try:
        import numpy  # noqa: F401
    finally:
        for n in unset:
            os.environ.pop(n, None)


_one_blas_thread()


def _keep_freed_memory() -> None:
    """glibc's malloc keeps up to 256 MB of freed memory for reuse (and serves blocks up to
    32 MB from it) instead of handing it back and faulting fresh pages in for the next
    chunk's arrays: on the 1M-kernel export about 40,000 fewer page faults, a third of
    the system time. Nothing where the C library is not glibc."""
    try:
        import ctypes
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return
    for param, value in ((-1, 256 << 20), (-3, 32 << 20)):    # M_TRIM_THRESHOLD, M_MMAP_THRESHOLD
        mallopt(param, value)

from fusionlab.analysis.readers import nsys_sqlite  # noqa: E402
from fusionlab.analysis.readers.trace import Chunks, ReportError, Trace  # noqa: E402
from fusionlab.analysis.run import fields as F  # noqa: E402
from fusionlab.analysis.run import metrics, projection, single_pass, stream, whole  # noqa: E402
from fusionlab.core.args import OneLineParser  # noqa: E402
from fusionlab.core.io import printable  # noqa: E402

WINDOWS = {
    "range": "the range's CPU-side start to end (duration_ms, wall_time_per_iter_ms, gpu_busy_fraction, "
             "idle_*_frac, gpu_other_work_frac; cpu_ms_per_instance)",
    "projection": "first kernel start to last kernel end of the kernels launched inside the range "
                  "(gpu_proj_*, as nsys nvtx_gpu_proj_sum)",
    "work": "per instance, the range's CPU-side window where its kernels all end inside it, else its projection; "
            "`window` names which (window_busy_fraction, window_idle_*_frac, window_other_work_frac, bound)",
    "activity": "(whole report): each process's first kernel launch call to its last kernel end",
}


def export_sqlite(rep: str, out: str) -> str:
    import shutil
    import subprocess
    if not shutil.which("nsys"):
        raise ReportError(f"{rep}: reading a .nsys-rep needs nsys on PATH to export it "
                          "(or pass the .sqlite from `nsys export --type sqlite`)")
    proc = subprocess.run(["nsys", "export", "--type", "sqlite", "--force-overwrite", "true",
                           "-o", out, rep], capture_output=True, text=True)
    if proc.returncode != 0 or not os.path.exists(out):
        last = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise ReportError(f"{rep}: nsys export failed ({last[0][:200]})")
    return out


HTA_NOTE = ("HTA's defaults (--hta): the last ProfilerStep and the work launched from its start on left out, "
            "as HTA's include_last_profiler_step=False does; kernel wait = gaps up to {:g} us")
DEFAULT_NOTE = ("kernel wait = gaps up to {:g} us and every ProfilerStep kept; HTA's defaults (30 us, the last step "
                "left out) differ: --hta uses them")


def hta_view(trace: Trace) -> Trace:
    """A torch.profiler Trace as HTA reads it by default: the ranges and launch calls that
    start before the last ProfilerStep starts, and the kernels those calls launched."""
    from fusionlab.analysis.readers import torch_trace
    steps = trace.ranges[trace.ranges["name"] == torch_trace.STEP_RANGE]
    if len(steps) < 2:
        return trace
    cut = int(steps["start"].max())
    return dataclasses.replace(trace, ranges=trace.ranges[trace.ranges["start"] < cut],
                               api=trace.api[trace.api["start"] < cut],
                               kernels=trace.kernels[trace.kernels["launch_start"] < cut])


def load_profile(path: str):
    """run_metrics.load_profile; an nsys export opened without importing pandas."""
    if path.endswith((".sqlite", ".db")) and os.path.exists(path):
        return nsys_sqlite.scan(path)
    from fusionlab.analysis.run.run_metrics import load_profile as load
    return load(path)


def analyse(path: str, hta: bool = False) -> dict:
    """Every range's metrics under both attributions (module doc), as printed; hta: with
    HTA's defaults (hta_view, fields.HTA_KERNEL_WAIT_US)."""
    if not os.path.exists(path):
        raise ReportError(f"{path}: no such file")
    if path.endswith(".nsys-rep"):
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            sql = export_sqlite(path, os.path.join(d, "report.sqlite"))
            return analyse_profile(path, load_profile(sql), sql, hta)
    if path.endswith(".json.gz"):
        from fusionlab.analysis.readers import torch_trace
        return analyse_profile(path, torch_trace.load(path), path, hta)
    return analyse_profile(path, load_profile(path), path, hta)


def analyse_profile(path: str, trace, source: str | None = None, hta: bool = False) -> dict:
    """analyse() of an opened profile (a streamed nsys export or a Trace); source: the
    file its GPU activities are read from (readers.gpu_ops; None: not read)."""
    wait = F.HTA_KERNEL_WAIT_US if hta else F.KERNEL_WAIT_US
    cut = None
    if hta and isinstance(trace, Trace) and trace.backend == "torch":
        from fusionlab.analysis.readers import torch_trace
        steps = trace.ranges[trace.ranges["name"] == torch_trace.STEP_RANGE]
        cut = int(steps["start"].max()) if len(steps) > 1 else None
        trace = hta_view(trace)
    report = Chunks(trace) if isinstance(trace, Trace) else trace
    keys = F.range_keys(report)
    ops = None
    if single_pass.usable(report):
        views, kt, proj, ops, has_kernels = single_pass.analyse(report, keys, True, wait, ops=bool(source),
                                                                frames=False)
    else:
        aug, has_kernels = whole.with_activity(report)
        targets = keys + ([(whole.WHOLE, None)] if has_kernels else [])
        tables = [(whole.WHOLE, None, "process")] if has_kernels else []
        views, kt = stream.views(aug, targets, F.ATTRIBUTIONS, tables, wait)
        proj = projection.projections(report, keys, kernel_wait_us=wait)
    out = {}
    for k in (F.key(n, d) for n, d in keys):
        out[k] = {a: one_bound({**metrics.clean(m), **proj[k][a]}) for a, m in views[k].items()}
    doc = {"file": path, "backend": trace.backend, "device": trace.device,
           "tool_version": trace.tool_version, "gpu": trace.gpu,
           "attribution": {"process": "kernels launched by any thread of the range's process while it was open",
                           "same_thread": "kernels launched by the range's own thread (nsys nvtx_gpu_proj_trace)"},
           "ranges": out}
    notes = list(getattr(trace, "notes", []))
    if trace.device == "cuda":
        notes.append((HTA_NOTE if hta else DEFAULT_NOTE).format(wait))
    if not keys:
        what = "NVTX ranges" if trace.backend == "nsys" else "ProfilerStep markers or record_function annotations"
        notes.append(f"no {what} in this profile: (whole report) covers all of its "
                     f"{'GPU ' if trace.device == 'cuda' else ''}work")
    late = [k for k, v in out.items() if v["process"].get("instances_gpu_after_range")]
    if late:
        notes.append(f"GPU work outlives its range in {', '.join(late)}: their busy share and bound are judged over "
                     "the work's projection (window column)")
    if has_kernels:
        out[whole.WHOLE] = {"process": {**metrics.clean(views[whole.WHOLE]["process"]), "window": "activity"}}
        doc["whole_report"] = {"top_kernels": whole.top_kernels(kt[(whole.WHOLE, None, "process")])}
        if ops is not None:
            doc["whole_report"].update(ops)
        elif source and trace.device == "cuda" and not single_pass.usable(report):
            from fusionlab.analysis.readers import gpu_ops, torch_trace
            ops = gpu_ops.nsys(source) if trace.backend == "nsys" else torch_trace.gpu_ops(source)
            if cut is not None:
                ops = ops[(ops["launch_start"] >= 0) & (ops["launch_start"] < cut)]   # HTA: launched by a kept call
            if len(ops):
                doc["whole_report"].update(whole.gpu_breakdown(ops, wait))
    doc["windows"] = WINDOWS
    doc["notes"] = notes
    return doc


def one_bound(m: dict) -> dict:
    """A range's fields with one verdict: `bound` over the work window that `window` names
    (projection.fields' window_bound), in place of the CPU window's."""
    m.pop("bound", None)
    if "window_bound" in m:
        m["bound"] = m.pop("window_bound")
    return m


PROG = "python -m fusionlab.analysis"


def main_diff(argv, prog: str = PROG + " diff") -> int:
    from fusionlab.analysis.report.compare import run_kernels
    from fusionlab.analysis.run.fusion import kernel_diff
    p = OneLineParser(prog=prog,
                                description="kernel-by-kernel diff of two runs (HTA TraceDiff classes)")
    p.add_argument("a"); p.add_argument("b")
    p.add_argument("--csv", help="write the diff table here too")
    a = p.parse_args(argv)
    d = kernel_diff(run_kernels(a.a), run_kernels(a.b))
    if a.csv:
        from fusionlab.analysis.sweep import tables
        if not os.path.isdir(os.path.dirname(os.path.abspath(a.csv))):
            raise ReportError(f"--csv {a.csv}: no folder {os.path.dirname(os.path.abspath(a.csv))} to write it in")
        tables.write(d, a.csv)   # whole or not at all
    show = d.assign(kernel=d.iloc[:, 0].map(printable).str.slice(0, 70)).drop(columns=d.columns[0])
    print(printable(show.to_string(index=False, float_format=lambda v: f"{v:.2f}"), lines=True))
    return 0


def main_compare(argv, prog: str = PROG + " compare") -> int:
    from fusionlab.analysis.report.compare import main_compare as run
    p = OneLineParser(prog=prog, description="compare two sweeps")
    p.add_argument("a", help="results folder of sweep A"); p.add_argument("b", help="results folder of sweep B")
    p.add_argument("--out", default="compare", help="output folder (compare.csv, compare.png/svg)")
    a = p.parse_args(argv)
    m = run(a.a, a.b, a.out)
    cols = ["model", "variant", "batch", "wall_time_per_iter_ms_a", "wall_time_per_iter_ms_b", "time_ratio_wall",
            "speedup_wall_a", "speedup_wall_b", "speedup_paired_a", "speedup_paired_b"]
    print(printable(m[cols].to_string(index=False, float_format=lambda v: f"{v:.3f}"), lines=True))
    print(printable(f"wrote {a.out}/compare.csv and compare.png/svg"))
    return 0


def main(argv=None, prog: str = PROG) -> int:
    """`python -m fusionlab.analysis [diff|compare] ...`; prog: the command's name in its
    usage and errors (`fusionlab` gives each subcommand its own: `fusionlab diff`)."""
    argv = sys.argv[1:] if argv is None else argv
    _keep_freed_memory()
    sub = {"diff": main_diff, "compare": main_compare}
    if argv and argv[0] in sub:
        try:
            return sub[argv[0]](argv[1:], prog if prog != PROG else f"{PROG} {argv[0]}")
        except ReportError as e:
            print(f"error: {printable(e)}", file=sys.stderr)
            return 2
    p = OneLineParser(prog=prog, description=__doc__.split("\n\n")[0])
    p.add_argument("report", nargs="+", help=".sqlite, .nsys-rep or torch trace .json / .json.gz")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="JSON (the default when the output is not a terminal)")
    fmt.add_argument("--csv", action="store_true", help="CSV: one row per range and attribution")
    p.add_argument("--hta", action="store_true", help="HolisticTraceAnalysis' defaults: the last ProfilerStep left "
                                                      "out, kernel wait up to 30 us (a note says which)")
    a = p.parse_args(argv)
    mode = "json" if a.json else "csv" if a.csv else "table" if sys.stdout.isatty() else "json"
    status, docs = 0, []
    for path in a.report:
        try:
            doc = analyse(path, a.hta)
        except ReportError as e:
            print(f"error: {printable(e)}", file=sys.stderr)
            status = 2
            continue
        if mode == "table":
            from fusionlab.analysis import terminal as table
            print(printable(table.text(doc), lines=True))
        else:
            docs.append(doc)
    if mode == "json" and docs:
        print(json.dumps(docs[0] if len(a.report) == 1 else docs, indent=2))
    elif mode == "csv" and docs:
        from fusionlab.analysis import terminal as table
        sys.stdout.write(table.csv(docs))
    return status


if __name__ == "__main__":
    sys.exit(main())
