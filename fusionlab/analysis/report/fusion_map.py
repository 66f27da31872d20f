"""The fusion map page (figures/fusion_map.html): per model, configuration and compiled
variant, eager's kernels -> the fused kernels that replaced them (sweep.ledger's
fusion_ledger), then what stayed apart and why (missed_fusions), time first; the kernels
no ledger row covers (library calls, eager's own list) last. Kernel names are shortened,
the full name on hover (title attribute). Where a run kept no provenance, its kernels are
listed with the ops their names parse into (analysis.run.fusion), said as such."""
from __future__ import annotations

import html
import re

import pandas as pd

from fusionlab.analysis.report.text import missed_cost_words
from fusionlab.analysis.run.ledger import short

CSS = ("body{font-family:sans-serif;font-size:13px;max-width:1380px;margin:12px auto;color:#222}"
       "table{border-collapse:collapse;margin:4px 0 14px;width:100%;table-layout:auto}"
       "td,th{border:1px solid #ccc;padding:3px 6px;vertical-align:top;text-align:left}"
       "th{background:#eee} td.n{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}"
       "td.k{font-family:monospace;font-size:12px;white-space:nowrap} .neg{color:#b00} .pos{color:#060}"
       "h3{margin:22px 0 4px;border-bottom:2px solid #888} h4{margin:10px 0 2px} p.note{color:#555;margin:2px 0}")
ID = ["model", "batch", "size", "mode", "dtype"]
NAME_WIDTH = 52


# what tells one eager CUDA kernel from another inside its template arguments
TAG = re.compile(r"(\w*gemm\w*|\w*Functor(?:OnSelf)?_\w+|\w+Functor|\w+_kernel_cuda|\w+Kernel\w*Impl|\w+_kernel)\b")

GENERIC = {"BinaryFunctor", "gpu_kernel_impl", "gpu_kernel_impl_nocast"}
# an anonymous namespace as nsys and the demangler write it (its "<" is no template's)
ANONYMOUS = re.compile(r"(?:<unnamed>|\(anonymous namespace\))::")


def display(full: str) -> str:
    """A kernel's readable name: Inductor's and the CPU's as they are (graph prefix off);
    a demangled CUDA name as its function without namespace or template arguments, led by
    the functor or op kernel inside them ('CUDAFunctor_add in vectorized_elementwise_kernel')."""
    s = ANONYMOUS.sub("", short(str(full)))
    if "<" not in s or s.startswith(("triton", "cpp")):
        return s
    head, args = s.split("<", 1)
    base = head.split("(")[0].split()[-1].split("::")[-1]
    tags = [t for t in TAG.findall(args) if t != base]
    tag = next((t for t in tags if t not in GENERIC), tags[0] if tags else None)
    return f"{tag} in {base}" if tag else base


def _name(full: str, width: int = NAME_WIDTH) -> str:
    """A kernel's readable name (display) cut to width, the full name on hover."""
    full = str(full)
    s = display(full)
    cut = s if len(s) <= width else s[:width - 1] + "…"
    return f"<span title='{html.escape(full, quote=True)}'>{html.escape(cut)}</span>"


def _us(x) -> str:
    if x != x or x is None:
        return ""
    return f"{x / 1e3:.2f} ms" if abs(x) >= 1e3 else f"{x:.1f} µs"


def _bytes(x) -> str:
    if x != x or x is None:
        return ""
    for unit, div in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(x) >= div:
            return f"{x / div:.1f} {unit}"
    return f"{x:.0f} B"


def _signed(x, fmt) -> str:
    if x != x or x is None:
        return ""
    return f"<span class='{'pos' if x > 0 else 'neg'}'>{fmt(x)}</span>"


def _table(head: list[str], rows: list[list[str]], numeric: set[int], kernel: set[int]) -> str:
    out = ["<table><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in head) + "</tr>"]
    for r in rows:
        cells = [f"<td class='{'n' if i in numeric else 'k' if i in kernel else ''}'>{c}</td>" for i, c in enumerate(r)]
        out.append("<tr>" + "".join(cells) + "</tr>")
    return "".join(out) + "</table>"


def _ledger_rows(lg: pd.DataFrame) -> str:
    rows = []
    for r in lg.itertuples():
        eager = [e.split(": ", 1) for e in str(r.eager_kernels or "").split(" | ") if e and e != "nan"]
        eager_html = "<br>".join(f"{html.escape(op)}: {_name(k, 32)}" for op, k in eager) or "<i>not matched</i>"
        bytes_cell = (f"{_bytes(r.eager_dram_bytes)} → {_bytes(r.dram_bytes)}" if r.dram_bytes == r.dram_bytes
                      else f"{_bytes(r.est_bytes_unfused)} → {_bytes(r.est_bytes)} (FX shapes)")
        inductor = getattr(r, "inductor_bytes", float("nan"))
        if inductor == inductor and inductor is not None:
            bytes_cell += f"<br><i>Inductor's estimate: {_bytes(inductor)}</i>"
        by_name = getattr(r, "ops_source", "provenance") == "name"
        ops = html.escape(str((r.ops_by_name if by_name else r.torch_ops) or "").replace("+", ", "))
        grad = str(getattr(r, "grad_of", "") or "")
        name_note = ("<br><i>ops from the kernel name (no provenance)</i>" if by_name
                     else "" if r.name_agrees else f"<br><i>name also says: {html.escape(str(r.name_only_ops))}</i>")
        if grad and grad != "nan":
            name_note = f"<br><i>gradient of: {html.escape(grad.replace('+', ', '))}</i>" + name_note
        rows.append([_signed(r.time_saved_us, _us), _us(r.eager_time_us), _us(r.time_us), _name(r.full_name),
                     f"{ops}{name_note}", eager_html, bytes_cell])
    return _table(["time saved", "eager", "fused", "fused kernel", "computes (torch ops)", "replaced eager kernels",
                   "bytes eager → fused"], rows, {0, 1, 2, 6}, {3})


def _call(call) -> str:
    """'cpp_fused_relu_0:2' -> 'cpp_fused_relu_0'."""
    return str(call).rsplit(":", 1)[0]


def _missed_rows(ms: pd.DataFrame) -> str:
    rows = []
    for r in ms.itertuples():
        if r.kind == "graph break":
            rows.append(["", "", "<i>graph break</i>", "", html.escape(str(r.reason))])
            continue
        rows.append([_us(r.time_cost_us), _bytes(r.buffer_bytes),
                     f"{_name(_call(r.producer), 36)} → {_name(_call(r.consumer), 36)}",
                     html.escape(str(r.buffers).replace("+", ", ")),
                     f"{html.escape(str(r.reason))} <i>({html.escape(str(r.reason_source))})</i>"])
    return _table(["time cost", "buffer", "producer → consumer", "buffers between", "why apart"], rows,
                  {0, 1}, {2})


def _kernel_rows(k: pd.DataFrame, top: int) -> str:
    rows = []
    for r in k.sort_values("time_per_iter_us", ascending=False).head(top).itertuples():
        op = str(getattr(r, "ops", "") or "")
        label = "add or sub (add kernel)" if op == "add" and getattr(r, "kind", "") == "eager" else op
        rows.append([_us(r.time_per_iter_us), f"{r.calls_per_iter:g}", _name(getattr(r, "full_name", r.name)),
                     html.escape(label.replace("+", ", ")), html.escape(str(getattr(r, "ops_source", "name")))])
    return _table(["time", "calls", "kernel", "ops", "ops from"], rows, {0, 1}, {2})


def page(kernels: pd.DataFrame, ledger: pd.DataFrame | None = None, missed: pd.DataFrame | None = None,
         top: int = 12) -> str:
    """The whole page (module doc)."""
    ledger = ledger if ledger is not None else pd.DataFrame()
    missed = missed if missed is not None else pd.DataFrame()
    parts = [f"<html><head><meta charset='utf-8'><title>fusion map</title><style>{CSS}</style></head><body>",
             "<h2>Fusion map</h2><p>Per configuration (repeat 0, one measured iteration): each fused kernel "
             "with the eager kernels it replaced and the time and bytes fusing saved, then the kernels the "
             "compiler left apart with the buffer between them and Inductor's reason. What a fused kernel "
             "computes comes from Inductor's provenance (FX nodes per kernel); a name, cut here (hover for the "
             "full one), can list ops the kernel does not compute. Eager's <i>sub</i> runs as its add kernel. "
             f"Kernels left apart: {html.escape(missed_cost_words(missed.get('bandwidth_source', [])))}.</p>"]
    if kernels.empty or "name" not in kernels or kernels["name"].isna().all():
        parts.append("<p>No kernels recorded.</p></body></html>")
        return "\n".join(parts)
    k = kernels[kernels["repeat"] == kernels["repeat"].min()] if "repeat" in kernels else kernels
    ids = [c for c in ID if c in k]
    for key, g in k.groupby(ids, dropna=False, sort=True):
        key = dict(zip(ids, key if isinstance(key, tuple) else (key,)))
        label = ", ".join(f"{c} {v}" for c, v in key.items() if c != "model" and str(v) not in ("nan", "None"))
        parts.append(f"<h3>{html.escape(str(key['model']))} <small>({html.escape(label)})</small></h3>")
        times = g.groupby("variant")["time_per_iter_us"].sum()
        parts.append("<p class='note'>Kernel time per iteration: " + ", ".join(
            f"{html.escape(str(v))} {_us(t)}" for v, t in times.sort_values(ascending=False).items()) + "</p>")
        for variant, v in g.groupby("variant"):
            if variant == "eager":
                continue
            parts.append(f"<h4>{html.escape(str(variant))}</h4>")
            sel = _select(ledger, key, variant)
            if len(sel):
                parts.append(_ledger_rows(sel.sort_values("time_saved_us", ascending=False, na_position="last")))
                apart = _select(missed, key, variant)
                if len(apart):
                    parts.append("<p class='note'>Left apart, most time cost first:</p>")
                    parts.append(_missed_rows(apart.head(top)))
                covered = set(sel["kernel"])
                rest = v[~v["name"].map(short).isin(covered)]
                if len(rest):
                    parts.append("<p class='note'>Its other kernels (library calls and kernels without "
                                 "provenance):</p>" + _kernel_rows(rest, top))
            else:
                parts.append("<p class='note'>No provenance kept for this run: ops parsed from kernel names.</p>")
                parts.append(_kernel_rows(v, top))
        e = g[g["variant"] == "eager"]
        if len(e):
            parts.append("<h4>eager</h4>" + _kernel_rows(e, top))
    parts.append("</body></html>")
    return "\n".join(parts)


def _select(df: pd.DataFrame, key: dict, variant: str) -> pd.DataFrame:
    if df is None or df.empty or "variant" not in df:
        return pd.DataFrame()
    m = df["variant"].astype(str) == str(variant)
    for c, val in key.items():
        if c in df:
            m &= df[c].astype(str) == str(val)
    return df[m]
