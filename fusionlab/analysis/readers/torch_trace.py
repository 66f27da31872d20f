"""Reader of torch.profiler Chrome traces (the backend for machines without nsys or a GPU).

On CUDA, kernels ("cat": "kernel") join their launch call ("cuda_runtime" /
"cuda_driver") through args.correlation, as in nsys. On the CPU there are no kernels
and no launch calls: a "CPU kernel" is an outermost operator on its thread that is not
a view/metadata op or a compiler wrapper, and it counts as its own launch.
Inductor's generated C++ kernels appear as such operators (cpp_fused_*) because the
runner turns on inductor's cpp.enable_kernel_profile.

Ranges are the trace's CPU-side annotations ("cat": "user_annotation"): the pipeline's own
("fusionlab:NAME", domain fusionlab), torch.profiler's step markers ProfilerStep#N (one
range STEP_RANGE, an instance per step) and every other record_function annotation under
its own name (no domain). A trace gzipped as torch.profiler writes it (.json.gz) is read
as it is.
"""
from __future__ import annotations

import math
import os

import pandas as pd

from fusionlab.analysis.readers.nsys_sqlite import LAUNCH_API
from fusionlab.analysis.readers.trace import API_COLUMNS, KERNEL_COLUMNS, RANGE_COLUMNS, ReportError, Trace, empty, join_launches
from fusionlab.core import ranges as R
from fusionlab.core.io import load_json

# aten ops that only create, reshape or alias tensors: no work, not counted as kernels
VIEW_OPS = {"aten::" + n for n in (
    "as_strided", "view", "_unsafe_view", "reshape", "expand", "resolve_conj", "resolve_neg",
    "empty", "empty_strided", "empty_like", "detach", "detach_", "alias", "t", "transpose",
    "permute", "unsqueeze", "squeeze", "select", "slice", "narrow", "lift_fresh",
    "_reshape_alias", "set_", "zeros_like")}
WRAPPER_PREFIXES = ("TorchDynamo", "Torch-Compiled Region", "Pregraph", "AOTDispatcher",
                    "## Call CompiledFxGraph", "CompiledFunction", "autograd::", "Optimizer.")


# a trace's size, at most, unpacked (core.io.read_bounded: a gzip also at most 100 times its size)
MAX_BYTES = int(os.environ.get("FUSIONLAB_MAX_TRACE_BYTES") or 4 << 30)
STEP_RANGE = "ProfilerStep"   # torch.profiler's ProfilerStep#N markers, one range
GPU_CATS = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}


MAX_US = (1 << 61) / 1000    # a time past this (in us) could overflow int64 nanoseconds once added to another


def _ns(us, field: str = "ts") -> int:
    """Microseconds (a number, or a string of one) as integer nanoseconds; ValueError where
    it is not a finite number within MAX_US, or a negative duration."""
    if isinstance(us, bool):
        raise ValueError(f"{field} {us!r} is not a number of microseconds")
    try:
        v = float(us)
    except (TypeError, ValueError):
        raise ValueError(f"{field} {repr(us)[:40]} is not a number of microseconds") from None
    if not math.isfinite(v) or abs(v) > MAX_US or (field == "dur" and v < 0):
        raise ValueError(f"{field} {v!r} is not a {'non-negative ' if field == 'dur' else ''}finite time "
                         f"of at most {MAX_US:.3g} us")
    return int(round(v * 1000))


def _span(e: dict) -> tuple[int, int]:
    start = _ns(e["ts"])
    return start, start + _ns(e.get("dur", 0), "dur")


def _bad_event(path: str, i: int, e: dict, err: Exception) -> ReportError:
    """ReportError naming the file, the event's place and name, and what is wrong with it."""
    what = f"no {err}" if isinstance(err, KeyError) else str(err)
    return ReportError(f"{path}: event {i} ({str(e.get('name', ''))[:60]!r}): {what}")


def load(path: str) -> Trace:
    if not os.path.exists(path):
        raise ReportError(f"{path}: no such file")
    doc, events = _events(path)
    rng, api, kern, ops = [], [], [], []
    for i, e in enumerate(events):
        try:
            _event(e, rng, api, kern, ops)
        except (KeyError, TypeError, ValueError) as err:
            raise _bad_event(path, i, e, err) from None
    ranges = pd.DataFrame(rng, columns=RANGE_COLUMNS) if rng else empty(RANGE_COLUMNS)
    api_df = pd.DataFrame(api, columns=API_COLUMNS + ["correlation"])
    if kern:
        k = pd.DataFrame(kern, columns=["name", "start", "end", "correlation", "stream"])
        k = join_launches(k, api_df)
        k["full_name"] = k["name"]
        device = "cuda"
    else:
        k = _cpu_kernels(ops)
        device = "cpu"
    return Trace(source=path, backend="torch", device=device, ranges=ranges,
                 api=api_df[API_COLUMNS] if len(api_df) else empty(API_COLUMNS),
                 kernels=k[KERNEL_COLUMNS].sort_values("start", ignore_index=True),
                 tool_version=(doc.get("deviceProperties") and None) if isinstance(doc, dict) else None)


def _event(e: dict, rng: list, api: list, kern: list, ops: list) -> None:
    """One complete event appended to its list (ValueError, TypeError or KeyError where a
    field is not what a torch.profiler trace holds)."""
    cat, name = str(e.get("cat", "")), str(e.get("name", ""))
    start, end = _span(e)
    tid = int(e["tid"]) if str(e.get("tid", "")).lstrip("-").isdigit() else 0
    args = e.get("args") or {}
    if not isinstance(args, dict):
        raise TypeError(f"args {repr(args)[:40]} is not an object")
    if cat == "user_annotation":
        rng.append(_range(name) + (start, end, tid))
    elif cat in ("cuda_runtime", "cuda_driver"):
        api.append((name, start, end, tid, bool(LAUNCH_API.match(name)), args.get("correlation")))
    elif cat == "kernel":
        kern.append((name, start, end, args.get("correlation"), int(args.get("stream", 0) or 0)))
    elif cat == "cpu_op":
        ops.append((name, start, end, tid))


def _events(path: str):
    """The trace document and its complete ("ph": "X") events; gzip read by its magic bytes."""
    try:
        doc = load_json(path, MAX_BYTES)
        events = doc["traceEvents"] if isinstance(doc, dict) else doc
        return doc, [e for e in events if isinstance(e, dict) and e.get("ph") == "X"]
    except (OSError, EOFError, ValueError, KeyError, TypeError) as e:
        raise ReportError(f"{path}: not a torch.profiler Chrome trace ({type(e).__name__}: {str(e)[:200]})") from None


def _range(name: str) -> tuple[str, str]:
    """(name, domain) of a user annotation (module doc)."""
    if name.startswith(R.DOMAIN + ":"):
        return name.split(":", 1)[1], R.DOMAIN
    if name.startswith(STEP_RANGE + "#"):
        return STEP_RANGE, ""
    return name, ""


def gpu_ops(path: str) -> pd.DataFrame:
    """Every GPU activity of the trace (kernels, memcpy, memset): readers.gpu_ops.COLUMNS,
    launch_start from the runtime call of the same correlation id (-1 without one)."""
    from fusionlab.analysis.readers.gpu_ops import COLUMNS, frame
    _, events = _events(path)
    calls, rows = {}, []
    for i, e in enumerate(events):
        try:
            cat, args = e.get("cat", ""), e.get("args") or {}
            if cat in ("cuda_runtime", "cuda_driver") and args.get("correlation") is not None:
                tid = int(e["tid"]) if str(e.get("tid", "")).lstrip("-").isdigit() else 0
                calls.setdefault(args["correlation"], (_ns(e["ts"]), tid))
            elif cat in GPU_CATS:
                start, end = _span(e)
                rows.append([GPU_CATS[cat], e.get("name", ""), start, end, int(args.get("device", 0) or 0),
                             int(args.get("stream", 0) or 0), args.get("correlation")])
        except (AttributeError, KeyError, TypeError, ValueError) as err:
            raise _bad_event(path, i, e, err) from None
    for r in rows:
        r[6:] = calls.get(r[6], (-1, -1))
    return frame(rows, COLUMNS)


def _cpu_kernels(ops) -> pd.DataFrame:
    """Outermost real operators per thread: the first non-wrapper, non-view operator on
    each call path (aten::matmul in eager, aten::addmm or cpp_fused_* under Inductor);
    operators nested in a counted one are its implementation, not separate kernels."""
    out = []
    by_tid: dict[int, list] = {}
    for op in ops:
        by_tid.setdefault(op[3], []).append(op)
    for tid, evs in by_tid.items():
        evs.sort(key=lambda e: (e[1], -e[2]))
        covered_until = None
        for name, start, end, _ in evs:
            if covered_until is not None and start < covered_until:
                continue
            if name in VIEW_OPS or name.startswith(WRAPPER_PREFIXES):
                continue
            out.append((name, start, end, tid, start, end, name, 0, name))
            covered_until = end
    return pd.DataFrame(out, columns=KERNEL_COLUMNS) if out else empty(KERNEL_COLUMNS)
