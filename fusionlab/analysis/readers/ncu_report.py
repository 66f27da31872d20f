"""Nsight Compute reports (.ncu-rep) as tables: one row per profiled result.

A result is one kernel launch (kernel replay) or one NVTX range instance (range replay):
its `kind` is `kernel` or `range` (a range has no kernel name: its name and full_name are
`range`, and its metrics are the whole range's: every kernel in it, back to back).
Two ways in, same columns: `load` reads the report through NVIDIA's `ncu_report` Python
module (PyPI `ncu-report`; works on a machine without ncu or a GPU), `load_csv` parses
`ncu --import REPORT --csv --page raw` (needs ncu); `read` takes the first of the two
that this machine has. Only the metrics in METRICS are read; a metric the report lacks
is NaN, so any report of the step reads into the same columns.

The step's passes and their metric sets are core.ncu_passes': BYTE_METRICS (bytes and
duration, one pass) and KERNEL_METRICS (the roofline pass's, several passes).

Metric names are Nsight Compute's own (`ncu --query-metrics`); COLUMNS maps each to the
project's column name. FLOPs are counted as Nsight Compute's roofline sections count
them: add, mul and 2 x fma thread instructions (predicated on) of the FP64, FP32 and
FP16/BF16 pipes (flops_fp64, flops_fp32, flops_fp16) and the tensor cores' own FLOP
counters per source precision (flops_tensor; `tensor_flops_source` ops), or where the
report lacks them 512 per tensor instruction in a matrix kernel (source `instructions`:
Nsight Compute's tensor roofline weight, not a FLOP count on Hopper); flops is their sum.
roof_* are the GPU's peaks from the same report: a per-cycle peak-sustained metric x its
weight x the unit's cycles per second (core.ncu_passes.ROOFS); the tensor roof is the
dense one (half the bf16 path's peak) where the report has that path.
"""
from __future__ import annotations

import csv
import io
import math
import os
import re
import shutil
import subprocess

from fusionlab.core import kernel_class, ncu_passes

# the per-kernel metrics (Nsight Compute names -> column names)
COLUMNS = {
    "gpu__time_duration.sum": "ncu_time_ns",
    "dram__bytes_read.sum": "dram_read_bytes",
    "dram__bytes_write.sum": "dram_write_bytes",
    "lts__t_bytes.sum": "l2_bytes",
    ncu_passes.L2_L1_METRIC: "l2_l1_bytes",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram_pct_peak",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "sm_pct_peak",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "achieved_occupancy_pct",
    "l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum": "local_load_bytes",
    "l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum": "local_store_bytes",
    ncu_passes.L2_SIZE_METRIC: "l2_size_bytes",
}
FLOP_METRICS = ncu_passes.FLOP_METRICS
BYTE_METRICS = list(ncu_passes.BYTE_METRICS)
KERNEL_METRICS = list(ncu_passes.ROOFLINE_METRICS)
# the columns each set gives (readers' row keys)
BYTE_COLUMNS = [COLUMNS[m] for m in BYTE_METRICS]
FLOP_COLUMNS = ["flops_fp64", "flops_fp32", "flops_fp16", "flops_tensor", "flops"]
ROOF_COLUMNS = [f"roof_{k}" for k in ncu_passes.ROOFS]
KERNEL_COLUMNS = [c for c in (*COLUMNS.values(), *FLOP_COLUMNS, *ROOF_COLUMNS)
                  if c not in BYTE_COLUMNS and c != "l2_size_bytes"]
METRICS = list(dict.fromkeys([*COLUMNS, *FLOP_METRICS, ncu_passes.TENSOR_METRIC, *ncu_passes.TENSOR_OPS_METRICS,
                              *ncu_passes.ROOF_METRICS]))
RANGE_METRICS = BYTE_METRICS
_PASSES = re.compile(r"- (\d+) pass(?:es)?\b")

MISSING_MODULE = ("reading .ncu-rep files needs NVIDIA's ncu_report module: `python -m pip install "
                  "ncu-report` (a manylinux x86_64 wheel), or ncu on PATH for `ncu --import --csv`")


class NcuReportError(RuntimeError):
    """A report that cannot be read (missing module, bad file)."""


def _module():
    try:
        import ncu_report
    except ImportError as e:
        raise NcuReportError(MISSING_MODULE) from e
    return ncu_report


def available() -> bool:
    """Whether the ncu_report module can be imported here."""
    try:
        _module()
        return True
    except NcuReportError:
        return False


def ncu_path() -> str | None:
    """The ncu on PATH, else CUDA's default install, else None."""
    found = shutil.which("ncu")
    return found or ("/usr/local/cuda/bin/ncu" if os.path.exists("/usr/local/cuda/bin/ncu") else None)


def readable() -> bool:
    """Whether this machine can read a report (the module, or ncu for --import)."""
    return available() or ncu_path() is not None


def read(path: str) -> list[dict]:
    """The report's rows through the module where it is installed, else through ncu."""
    if available() or ncu_path() is None:
        return load(path)
    return load_csv(path, ncu_path())


def count(path: str) -> int | None:
    """The number of results in the report, or None where it cannot be read here."""
    if not readable():
        return None
    try:
        return len(read(path))
    except NcuReportError:
        return None


def passes(log: str) -> int | None:
    """The most replay passes any result of an ncu log took (`... - 10 passes`), or None."""
    found = [int(n) for n in _PASSES.findall(log or "")]
    return max(found) if found else None


def _value(action, metric: str) -> float:
    m = action.metric_by_name(metric)
    if m is None:
        return math.nan
    try:
        return float(m.as_double())
    except (TypeError, ValueError):
        return math.nan


def _nansum(values) -> float:
    values = [v for v in values if not math.isnan(v)]
    return sum(values) if values else math.nan


RANGE = "range"


def _row(idx: int, name: str, full_name: str, values: dict, kind: str = "kernel") -> dict:
    row = {"id": idx, "kind": kind, "name": name, "full_name": full_name}
    for metric, col in COLUMNS.items():
        row[col] = values.get(metric, math.nan)
    for p, col in (("d", "flops_fp64"), ("f", "flops_fp32"), ("h", "flops_fp16")):
        row[col] = _nansum([values.get(m, math.nan) * w for m, w in FLOP_METRICS.items()
                            if m.startswith(f"smsp__sass_thread_inst_executed_op_{p}")])
    # tensor-pipe instructions are MMA FLOPs only in a kernel that does matrix products (a
    # GEMM, a convolution, attention); elsewhere (an elementwise kernel) they are reported
    # apart, as instructions, and add no FLOPs
    inst = values.get(ncu_passes.TENSOR_METRIC, math.nan)
    mma = kernel_class.kernel_class(name, full_name) in kernel_class.MMA_CLASSES or kind == RANGE
    ops = _nansum([values.get(m, math.nan) for m in ncu_passes.TENSOR_OPS_METRICS])
    if ops == ops:
        row["flops_tensor"], row["tensor_flops_source"] = ops, "ops"
    else:
        row["flops_tensor"] = inst * ncu_passes.TENSOR_FLOPS_PER_INST if mma else (0.0 if inst == inst else math.nan)
        row["tensor_flops_source"] = "instructions" if inst == inst else ""
    row["tensor_inst_not_mma"] = math.nan if mma else inst
    row["flops"] = _nansum([row[c] for c in FLOP_COLUMNS[:-1]])
    for key, (peak, weight, clock) in ncu_passes.ROOFS.items():
        row[f"roof_{key}"] = values.get(peak, math.nan) * weight * values.get(clock, math.nan)
    dense = values.get(ncu_passes.TENSOR_OPS_PEAK, math.nan) * ncu_passes.TENSOR_OPS_PEAK_WEIGHT
    if dense == dense:
        row["roof_tensor_flops"] = dense * values.get(ncu_passes.ROOFS["tensor_flops"][2], math.nan)
    return row


def load(path: str) -> list[dict]:
    """Every result of the report's ranges, in order: id, kind (kernel | range), name
    (function), full_name (demangled), the COLUMNS and flops."""
    ncu_report = _module()
    try:
        ctx = ncu_report.load_report(path)
    except Exception as e:  # the module raises its own types for a bad file
        raise NcuReportError(f"{path}: cannot load ({e})") from e
    rows = []
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for i in range(rng.num_actions()):
            a = rng.action_by_idx(i)
            values = {m: _value(a, m) for m in METRICS}
            if a.workload_type() == a.WorkloadType_RANGE:
                rows.append(_row(len(rows), RANGE, RANGE, values, RANGE))
            else:
                rows.append(_row(len(rows), a.name(), a.name(a.NameBase_DEMANGLED), values))
    return rows


def _number(text: str) -> float:
    text = (text or "").replace(",", "").strip()
    try:
        return float(text)
    except ValueError:
        return math.nan


# `--page raw` CSV: the unit row says what a value is in; the columns come scaled to it
_UNIT = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9,
         "nsecond": 1, "usecond": 1e3, "msecond": 1e6, "second": 1e9, "ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9,
         "%": 1, "inst": 1, "": 1, "cycle": 1, "hz": 1, "Khz": 1e3, "Mhz": 1e6, "Ghz": 1e9,
         "inst/cycle": 1, "byte/cycle": 1, "byte/second": 1, "Kbyte/second": 1e3, "Mbyte/second": 1e6,
         "Gbyte/second": 1e9, "Tbyte/second": 1e12}
# C++ scope prefixes and integer casts that ncu's CSV names leave out and the module's and
# nsys's demangled names keep; every scope goes: a function's own namespace differs too
# (nsys: at::native::sigmoid_kernel_cuda, ncu: at::sigmoid_kernel_cuda)
_SCOPE = re.compile(r"\b[A-Za-z_]\w*::")
_CAST = re.compile(r"\((?:unsigned |signed )?(?:int|long|long long|short|char|bool)\)")


def kernel_key(name: str) -> str:
    """A kernel's demangled name without scopes and integer casts: the same for nsys's
    demangledName, the module's demangled name and `ncu --csv`'s (the join key)."""
    if not isinstance(name, str):
        return name
    return _CAST.sub("", _SCOPE.sub("", name)).replace(" ", "")


def parse_raw_csv(text: str) -> list[dict]:
    """The rows of `ncu --import R --csv --page raw` (the second line is the units),
    with the values converted to bytes, nanoseconds, percent and instructions."""
    lines = list(csv.reader(io.StringIO(text)))
    lines = [line for line in lines if line and not line[0].startswith("==")]
    if len(lines) < 2:
        return []
    header = lines[0]
    first = dict(zip(header, lines[1]))
    if first.get("ID", "x") == "":   # the units row (empty under ID)
        units, data = lines[1], lines[2:]
    else:
        units, data = [""] * len(header), lines[1:]
    rows = []
    for line in data:
        rec = dict(zip(header, line))
        unit = dict(zip(header, units))
        values = {m: _number(rec.get(m, "")) * _UNIT.get(unit.get(m, ""), math.nan) for m in METRICS if m in rec}
        name = rec.get("Kernel Name") or rec.get("Function Name") or ""
        # a range result has no launch (no grid) and ncu names it `range`
        kind = RANGE if name == RANGE and not rec.get("Grid Size") else "kernel"
        rows.append(_row(len(rows), name.split("(")[0].split("<")[0].split()[-1] if name else "", name, values, kind))
    return rows


def load_csv(path: str, ncu: str = "ncu", timeout: float = 300) -> list[dict]:
    """The report through `ncu --import PATH --csv --page raw` (ncu needed)."""
    try:
        out = subprocess.run([ncu, "--import", path, "--csv", "--page", "raw", "--print-kernel-base", "demangled",
                              "--print-units", "base"],
                             capture_output=True, text=True, timeout=timeout, check=True).stdout
    except (OSError, subprocess.SubprocessError) as e:
        raise NcuReportError(f"{path}: ncu --import failed ({e})") from e
    return parse_raw_csv(out)
