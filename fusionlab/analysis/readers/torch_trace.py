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


def _ns(us) -> int:
    return int(round(float(us) * 1000))


def load(path: str) -> Trace:
    if not os.path.exists(path):
        raise ReportError(f"{path}: no such file")
    doc, events = _events(path)
    rng, api, kern, ops = [], [], [], []
    for e in events:
        cat, name = e.get("cat", ""), e.get("name", "")
        start = _ns(e["ts"]); end = start + _ns(e.get("dur", 0))
        tid = int(e["tid"]) if str(e.get("tid", "")).lstrip("-").isdigit() else 0
        if cat == "user_annotation":
            rng.append(_range(name) + (start, end, tid))
        elif cat in ("cuda_runtime", "cuda_driver"):
            api.append((name, start, end, tid, bool(LAUNCH_API.match(name)),
                        (e.get("args") or {}).get("correlation")))
        elif cat == "kernel":
            args = e.get("args") or {}
            kern.append((name, start, end, args.get("correlation"), args.get("stream", 0)))
        elif cat == "cpu_op":
            ops.append((name, start, end, tid))
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
    for e in events:
        cat, args = e.get("cat", ""), e.get("args") or {}
        if cat in ("cuda_runtime", "cuda_driver") and args.get("correlation") is not None:
            tid = int(e["tid"]) if str(e.get("tid", "")).lstrip("-").isdigit() else 0
            calls.setdefault(args["correlation"], (_ns(e["ts"]), tid))
        elif cat in GPU_CATS:
            start = _ns(e["ts"])
            rows.append([GPU_CATS[cat], e.get("name", ""), start, start + _ns(e.get("dur", 0)),
                         int(args.get("device", 0) or 0), int(args.get("stream", 0) or 0), args.get("correlation")])
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
