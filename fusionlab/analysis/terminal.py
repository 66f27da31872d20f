"""analyse()'s document (fusionlab.analysis.__main__) as a table for a terminal and as CSV.

Table, one row per range (attribution `process`; a name longer than WIDTH cut in its
middle, cut()): instances; kernels per instance; GPU (kernel) time per instance; CPU-side
duration per instance; GPU-side projection per instance (first kernel start to last
kernel end); busy share and bound over the window named in the last column (range,
projection, mixed, activity: the document's "windows").
Then the whole profile's top kernels, its temporal breakdown per device and its idle
breakdown per stream, and the document's notes.
"""
from __future__ import annotations

import io

import pandas as pd

WHOLE = "(whole report)"
WIDTH = 60      # the table's widest range name; JSON and CSV keep every name whole


def cut(names: list[str], width: int = WIDTH) -> list[str]:
    """Names longer than width cut in the middle ("..."), keeping both ends; every name
    whole where cutting would make two read the same."""
    head = (width - 3) // 2
    short = [n if len(n) <= width else n[:head] + "..." + n[len(n) - (width - 3 - head):] for n in names]
    return short if len(set(short)) == len(set(names)) else list(names)


def _f(v, fmt="{:.3f}") -> str:
    return "-" if v is None or v != v else fmt.format(v)


def rows(doc: dict) -> list[dict]:
    """The table's rows (module doc); (whole report) first."""
    out = []
    names = sorted(doc["ranges"], key=lambda k: k != WHOLE)
    for k in names:
        m = doc["ranges"][k].get("process", {})
        n = m.get("instances") or 0
        whole = k == WHOLE
        out.append({
            "range": k, "instances": n,
            "kernels/inst": m.get("kernels", 0) / n if n else None,
            "GPU ms/inst": m["kernel_time_ms"] / n if n and m.get("kernel_time_ms") is not None else None,
            "CPU ms/inst": m["duration_ms"] / n if n and "duration_ms" in m else None,
            "GPU proj ms/inst": (m.get("gpu_span_per_iter_ms") if whole else m.get("gpu_proj_ms_per_instance")),
            "busy": m.get("gpu_busy_fraction") if whole else m.get("window_busy_fraction"),
            "bound": m.get("bound"),
            "window": m.get("window", "-"),
        })
    return out


def text(doc: dict) -> str:
    """The document as the module doc's table."""
    w = io.StringIO()
    tool = " ".join(x for x in (doc["backend"], doc.get("tool_version")) if x)
    w.write(f"{doc['file']}: {tool}, {doc['device']}{', ' + doc['gpu'] if doc.get('gpu') else ''}\n")
    for n in doc.get("notes", []):
        w.write(f"note: {n}\n")
    r = rows(doc)
    if r:
        t = pd.DataFrame(r)
        for c in ("kernels/inst", "GPU ms/inst", "CPU ms/inst", "GPU proj ms/inst"):
            t[c] = [_f(v, "{:.1f}" if c == "kernels/inst" else "{:.3f}") for v in t[c]]
        t["busy"] = [_f(v if v is None else 100 * v, "{:.1f}%") for v in t["busy"]]
        t["bound"] = t["bound"].fillna("-")
        t["range"] = cut(list(t["range"]))
        w.write(t.to_string(index=False) + "\n")
    else:
        w.write("no ranges and no kernels\n")
    wr = doc.get("whole_report", {})
    if wr.get("top_kernels"):
        w.write("\ntop kernels of the whole report:\n")
        t = pd.DataFrame(wr["top_kernels"])
        t["name"] = t["name"].str.slice(0, 60)
        t["share"] = [_f(100 * v, "{:.1f}%") for v in t["share"]]
        w.write(t[["name", "calls", "total_ms", "share", "median_us"]].to_string(index=False, float_format=lambda v: f"{v:.3f}") + "\n")
    if wr.get("devices"):
        w.write("\nGPU time per device (HTA temporal breakdown, share of first to last GPU activity):\n")
        t = pd.DataFrame(wr["devices"])
        for c in ("idle_frac", "compute_frac", "non_compute_frac"):
            t[c] = [_f(v if v is None else 100 * v, "{:.1f}%") for v in t[c]]
        w.write(t.to_string(index=False, float_format=lambda v: f"{v:.3f}") + "\n")
    if wr.get("streams"):
        w.write("\nidle time per stream (HTA idle time breakdown, ms):\n")
        t = pd.DataFrame(wr["streams"])[["device", "stream", "gpu_ops", "kernels", "kernel_time_ms", "span_ms",
                                         "idle_ms", "idle_host_wait_ms", "idle_kernel_wait_ms", "idle_other_ms"]]
        w.write(t.to_string(index=False, float_format=lambda v: f"{v:.3f}") + "\n")
    w.write("\nbusy, bound: over the window column's window: range = the range's CPU-side span; projection = first "
            "kernel start to last kernel end of the work it launched; activity = first launch to last kernel end of "
            "the process. Kernels attributed to a range by launch call (any thread of its process); --json for "
            "every field.\n")
    return w.getvalue()


def csv(docs) -> str:
    """One row per document (one or a list), range and attribution: file, key, then every
    field; the columns are the union of every row's (empty where a row has no such field)."""
    docs = [docs] if isinstance(docs, dict) else docs
    out = [{"file": d["file"], "key": k, **m} for d in docs for k, v in d["ranges"].items() for a, m in v.items()]
    if not out:
        return ""
    return pd.DataFrame(out).to_csv(index=False)
