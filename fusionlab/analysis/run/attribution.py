"""Where one run's kernel time goes: every kernel's time per iteration in the measured range
attributed to an nn.Module path (`encoder.layer.3.attention.self`, "" for the model
itself), a source line of the user's code (file:line) and the op that ran it.

- measured(): from the profile (an nsys export or a torch.profiler trace, as run_metrics
  reads it), each kernel's time per iteration in the measured range (its launches' summed
  duration over the MEASURE range's ITERATION instances, launched by any thread of the
  process: metrics' `process` attribution, the time kernels.csv holds) and the launches of
  one iteration in the order the kernels ran: the op record's iteration (core.ranges.ATTRIBUTE,
  an eager run's), else the first ITERATION instance in the measured range (a compiled
  run's, whose library kernels analysis.run.attribution_split places by that order).
- eager(): each launch of the ATTRIBUTE iteration joined to the op range (core.ranges.OP_DOMAIN,
  runner.op_record) of its thread that holds its launch call (on the CPU, where an op is
  its own launch, the op ranges inside it, by overlap); the i-th op range in start order is
  the op record's i-th op, where both name the same op. A kernel's time per iteration is
  split among its launches there by their durations (rule `launch`). On the CPU an op
  under the dispatch mode can show as the mode's own event (PythonDispatchMode): such a
  launch stands for the measured kernel its op range names.
- compiled runs: analysis.run.attribution_split, from Inductor's provenance.
- the training loop's own parts (split_loop; eager and compiled): a launch inside one of the
  loop's ranges of its thread (core.ranges.LOOP, runner.timing.train_iteration: the loss
  from the model's output, the optimizer step, zero_grad) is placed on that part, module
  LOSS / OPTIMIZER_STEP / ZERO_GRAD, phase "loss" / "step" / "zero_grad", source the
  runner's line (run.json's loop_sources; "" without), rule `loop range`; in an eager run
  the op is its op range's. It takes precedence over the op record's OUTSIDE and over a
  compiled run's `sequence`, `library` and `no provenance`; only a generated kernel that
  Inductor's provenance lists keeps its provenance. The loss's backward (its fill and
  mean-backward kernels, launched by backward(), outside the loss range, on autograd's
  thread on the GPU) is not a loop part: eager puts it OUTSIDE (phase backward, the op
  record's module None), a compiled run leaves it `no provenance`.
Rows that cannot be attributed have module UNATTRIBUTED and say why in `rule`, so that the
rows of a run always sum to its kernel time per iteration.
Columns (COLUMNS): module, source, op, phase (forward / backward / the graph's kind),
kernel, time_us (per iteration), share (of the run's kernel time), rule (RULES' key)."""
from __future__ import annotations

import os
import sys
from collections import defaultdict

import numpy as np
import pandas as pd

from fusionlab.analysis.readers.trace import Chunks, RangeTable, Trace
from fusionlab.core import ranges as R
from fusionlab.core.io import read_json

COLUMNS = ["module", "source", "op", "phase", "kernel", "time_us", "share", "rule"]
UNATTRIBUTED = "(unattributed)"
OUTSIDE = "(outside the model)"   # an op no module of the model ran, outside the loop's ranges
LOSS, OPTIMIZER_STEP, ZERO_GRAD = "(loss)", "(optimizer step)", "(zero_grad)"   # the loop's own parts
# the training loop's parts by their range (core.ranges.LOOP): (module, phase)
LOOP = {R.LOSS: (LOSS, "loss"), R.OPTIMIZER_STEP: (OPTIMIZER_STEP, "step"), R.ZERO_GRAD: (ZERO_GRAD, "zero_grad")}
LOOP_MODULES = tuple(m for m, _ in LOOP.values())
RULES = {
    "launch": "measured: the kernel's launches inside this op's range in the op record's iteration; its time "
              "per iteration split among them by their durations there",
    "flops": "modelled: a kernel's time split among the matmul-class ops it computes by their FLOPs",
    "bytes": "modelled: a fused kernel's time split among its ops by the bytes each would move unfused "
             "(its inputs and output by the FX shapes)",
    "equal": "modelled: split equally among the kernel's ops (no shapes known)",
    "sequence": "measured: a library kernel (not generated) placed at the library call of its class that ran "
                "between the generated kernels around it, by the order the kernels ran in one measured "
                "iteration; its time per iteration split among its launches there by their durations",
    "library": "modelled: library kernels (not generated) that the order the kernels ran does not place, "
               "pooled by class and split among the graphs' library calls of that class by FLOPs (equally "
               "where none is a matmul)",
    "inherited": "modelled: a node an Inductor pass made, with no module or source line of its own, placed "
                 "where the other nodes of its kernel call are (by their shares of the call); its share of "
                 "the call by the call's rule (flops, bytes or equal)",
    "loop range": "measured: launched inside the training loop's loss, optimizer-step or zero_grad range of "
                  "its thread (core.ranges.LOOP) in the op record's iteration (a compiled run's: the first "
                  "measured one); its time per iteration split among its launches there by their durations",
    "no op record": "not attributed: the run kept no op record (op_record.json) or no ATTRIBUTE range",
    "not in op record": "not attributed: the kernel did not run in the op record's iteration",
    "outside op ranges": "not attributed: launched outside every op range",
    "no provenance": "not attributed: a kernel no provenance mapping lists (and no library call of its class)",
    "no module": "not attributed: the node's meta has neither a module stack nor a stack trace",
    "no node meta": "not attributed: the graph's node meta is absent (a graph from Inductor's cache)",
}
OP_RECORD = "op_record.json"


class Measured:
    """One run's kernels: time per iteration (us) by kernel name, one iteration's launches
    (module doc; columns launch_start, launch_end, tid, duration, name, in the order the
    kernels started), the op ranges inside it (name, start, end, tid, in start order) and
    the training loop's ranges inside it (loop_ranges: the same columns, core.ranges.LOOP)."""

    def __init__(self, per_iter: dict[str, float], launches: pd.DataFrame, op_ranges: pd.DataFrame, iters: int,
                 loop_ranges: pd.DataFrame | None = None):
        self.per_iter, self.launches, self.op_ranges, self.iters = per_iter, launches, op_ranges, iters
        self.loop_ranges = loop_ranges if loop_ranges is not None else pd.DataFrame(columns=RANGE_FRAME)

    @property
    def total_us(self) -> float:
        return float(sum(self.per_iter.values()))


def _inside(x: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """x within any [start, end] (instances do not overlap)."""
    if not len(start):
        return np.zeros(len(x), bool)
    order = np.argsort(start)
    s, e = start[order], end[order]
    i = np.searchsorted(s, x, side="right") - 1
    return (i >= 0) & (x <= e[np.clip(i, 0, None)])


RANGE_FRAME = ["name", "start", "end", "tid"]


def _op_ranges(table: RangeTable, window: tuple[int, int] | None, loop: bool = False) -> pd.DataFrame:
    """The op ranges (nsys: domain OP_DOMAIN; torch.profiler: labelled by ranges.op_label)
    inside window, in start order; with `loop`, the training loop's ranges instead
    (core.ranges.LOOP, domain DOMAIN)."""
    prefix = R.op_label("")
    rows = []
    for i, (name, dom) in enumerate(zip(table.name, table.domain)):
        if loop:
            if dom == R.DOMAIN and name in R.LOOP:
                rows.append((name, table.start[i], table.end[i], table.tid[i]))
        elif dom == R.OP_DOMAIN:
            rows.append((name, table.start[i], table.end[i], table.tid[i]))
        elif isinstance(name, str) and name.startswith(prefix):
            rows.append((name[len(prefix):], table.start[i], table.end[i], table.tid[i]))
    df = pd.DataFrame(rows, columns=RANGE_FRAME)
    if window is not None and len(df):
        df = df[(df["start"] >= window[0]) & (df["end"] <= window[1])]
    return df.sort_values(["start", "end"], kind="stable", ignore_index=True)


def measured(profile) -> Measured:
    """Measured (class doc) of an opened profile (run_metrics.load_profile's)."""
    report = Chunks(profile) if isinstance(profile, Trace) else profile
    table = RangeTable.of_profile(report)
    m = table.instances(R.MEASURE, R.DOMAIN)
    it = table.instances(R.ITERATION, R.DOMAIN)
    iters = int(_inside(it.start, m.start, m.end).sum()) or 1
    a = table.instances(R.ATTRIBUTE, R.DOMAIN)
    first = np.flatnonzero(_inside(it.start, m.start, m.end))[:1]
    window = ((int(a.start[0]), int(a.end[0])) if len(a) else
              (int(it.start[first[0]]), int(it.end[first[0]])) if len(first) else None)
    total: dict[int, int] = defaultdict(int)
    kept = []
    for c in report.kernel_chunks(names=True):
        dur = c[:, 1] - c[:, 0]
        inm = _inside(c[:, 2], m.start, m.end)
        for fid, d in zip(c[inm, 6].tolist(), dur[inm].tolist()):
            total[fid] += d
        if window is not None:
            ina = (c[:, 2] >= window[0]) & (c[:, 2] <= window[1])
            kept.append(np.column_stack([c[ina, 2], c[ina, 3], c[ina, 4], dur[ina], c[ina, 6]]))
    rows = np.concatenate(kept) if kept else np.zeros((0, 5), np.int64)
    names = report.strings(set(total) | set(rows[:, 4].tolist()))
    per_iter: dict[str, float] = defaultdict(float)
    for fid, ns in total.items():
        per_iter[names[fid]] += ns / iters / 1e3
    launches = pd.DataFrame(rows[:, :4], columns=["launch_start", "launch_end", "tid", "duration"])
    launches["name"] = [names[int(i)] for i in rows[:, 4]]
    return Measured(dict(per_iter), launches, _op_ranges(table, window), iters, _op_ranges(table, window, loop=True))


def launch_ops(launches: pd.DataFrame, op_ranges: pd.DataFrame) -> list[list[tuple[int, float]]]:
    """Per launch, [(op range index, weight)] (weights sum to 1; [] outside every op range):
    the op ranges of its thread that overlap its launch call, weighted by the overlap (equal
    where every overlap is empty: a launch call that takes no time)."""
    out: list[list[tuple[int, float]]] = [[] for _ in range(len(launches))]
    for tid, ops in op_ranges.groupby("tid", sort=False):
        idx = ops.index.to_numpy()
        s, e = ops["start"].to_numpy(np.int64), ops["end"].to_numpy(np.int64)
        mine = np.flatnonzero(launches["tid"].to_numpy() == tid)
        ls, le = launches["launch_start"].to_numpy()[mine], launches["launch_end"].to_numpy()[mine]
        lo = np.searchsorted(e, ls, side="left")      # ranges ending at or after the call's start
        hi = np.searchsorted(s, le, side="right")     # ranges starting at or before its end
        for j, a, b, x, y in zip(mine, lo, hi, ls, le):
            cand = range(a, b)
            if not len(cand):
                continue
            w = [max(0, min(y, e[k]) - max(x, s[k])) for k in cand]
            tot = sum(w)
            out[j] = [(int(idx[k]), (wk / tot) if tot else 1 / len(cand)) for k, wk in zip(cand, w)]
    return out


def loop_parts(launches: pd.DataFrame, loop_ranges: pd.DataFrame) -> list[str | None]:
    """Per launch, the loop range (core.ranges.LOOP name) of its thread that holds its launch
    call's start; None outside every one."""
    out: list[str | None] = [None] * len(launches)
    if not len(loop_ranges) or not len(launches):
        return out
    tids, starts = launches["tid"].to_numpy(), launches["launch_start"].to_numpy(np.int64)
    for r in loop_ranges.itertuples():
        for j in np.flatnonzero((tids == r.tid) & (starts >= r.start) & (starts <= r.end)):
            out[j] = r.name
    return out


def _loop_row(part: str, kernel: str, time_us: float, op: str, sources: dict | None) -> dict:
    module, phase = LOOP[part]
    return {"module": module, "source": (sources or {}).get(part) or "", "op": op, "phase": phase,
            "kernel": kernel, "time_us": time_us, "rule": "loop range"}


def split_loop(m: Measured, sources: dict | None = None, keep=lambda kernel: False):
    """(rows of the loop's parts, the rest of per_iter, the rest of the launches): each
    kernel's time per iteration split among its launches by their durations, the launches
    inside a loop range (loop_parts) placed on its part (module doc), but for kernels
    `keep` names (a compiled run's generated kernels, which their provenance places).
    sources: run.json's loop_sources."""
    parts = loop_parts(m.launches, m.loop_ranges)
    if not any(parts):
        return [], dict(m.per_iter), m.launches
    names, dur = m.launches["name"].tolist(), m.launches["duration"].to_numpy(float)
    by_name: dict[str, list[int]] = defaultdict(list)
    for j, k in enumerate(names):
        by_name[k].append(j)
    rows, rest, drop = [], dict(m.per_iter), set()
    for kernel, t in m.per_iter.items():
        js = by_name.get(kernel, [])
        if keep(kernel) or not any(parts[j] for j in js):
            continue
        tot = dur[js].sum()
        for j in (j for j in js if parts[j]):
            x = t * (dur[j] / tot if tot else 1 / len(js))
            rows.append(_loop_row(parts[j], kernel, x, "", sources))
            rest[kernel] -= x
            drop.add(j)
        if rest[kernel] <= 1e-9 * max(t, 1.0):
            del rest[kernel]
    left = m.launches.drop(index=m.launches.index[sorted(drop)]).reset_index(drop=True)
    return rows, rest, left


def _unattributed(kernel: str, time_us: float, rule: str, phase: str = "") -> dict:
    return {"module": UNATTRIBUTED, "source": "", "op": "", "phase": phase, "kernel": kernel,
            "time_us": time_us, "rule": rule}


def eager(m: Measured, record: dict | None, sources: dict | None = None) -> pd.DataFrame:
    """The rows (module doc) of an eager run from its Measured and its op record
    (sources: run.json's loop_sources)."""
    rows = []
    ops = (record or {}).get("ops") or []
    if not ops or not len(m.op_ranges):
        rows, rest, _ = split_loop(m, sources)
        rows += [_unattributed(k, t, "no op record") for k, t in rest.items()]
        return finish(rows, m.total_us)
    parts = loop_parts(m.launches, m.loop_ranges)
    names = m.op_ranges["name"].tolist()
    agree = [i < len(ops) and ops[i]["op"] == n for i, n in enumerate(names)]
    weights = launch_ops(m.launches, m.op_ranges)
    by_name: dict[str, list[int]] = defaultdict(list)
    for j, k in enumerate(m.launches["name"]):
        by_name[k].append(j)
    for j, k in enumerate(m.launches["name"]):   # a CPU op under the dispatch mode's own event
        if k not in m.per_iter:
            for i, _ in weights[j]:
                if agree[i] and names[i] in m.per_iter and names[i] not in by_name:
                    by_name.setdefault(f"@{names[i]}", []).append(j)
    for k in [k for k in by_name if k.startswith("@")]:
        by_name[k[1:]] = by_name.pop(k)
    dur = m.launches["duration"].to_numpy(float)
    for kernel, t in m.per_iter.items():
        js = by_name.get(kernel)
        if not js:
            rows.append(_unattributed(kernel, t, "not in op record"))
            continue
        tot = dur[js].sum()
        for j in js:
            part = t * (dur[j] / tot if tot else 1 / len(js))
            placed = [(i, w) for i, w in weights[j] if agree[i]]
            lost = 1.0 - sum(w for _, w in placed)
            for i, w in placed:
                o = ops[i]
                module = o.get("module")
                if parts[j]:
                    rows.append(_loop_row(parts[j], kernel, part * w, o["op"], sources))
                    continue
                rows.append({"module": OUTSIDE if module is None else module, "source": o.get("source") or "",
                             "op": o["op"],
                             "phase": o.get("phase", ""), "kernel": kernel, "time_us": part * w, "rule": "launch"})
            if lost > 1e-12:
                rows.append(_loop_row(parts[j], kernel, part * lost, "", sources) if parts[j] else
                            _unattributed(kernel, part * lost, "outside op ranges"))
    return finish(rows, m.total_us)


def finish(rows: list[dict], total_us: float) -> pd.DataFrame:
    """Rows summed by (module, source, op, phase, kernel, rule), with share, most time first."""
    df = pd.DataFrame(rows, columns=[c for c in COLUMNS if c != "share"])
    if df.empty:
        return pd.DataFrame(columns=COLUMNS)
    keys = ["module", "source", "op", "phase", "kernel", "rule"]
    df = df.fillna({k: "" for k in keys}).groupby(keys, sort=False, as_index=False)["time_us"].sum()
    df["share"] = df["time_us"] / total_us if total_us else np.nan
    return df[COLUMNS].sort_values("time_us", ascending=False, kind="stable", ignore_index=True)


def attribute(run_json: str, profile: str) -> pd.DataFrame:
    """The rows of one run (module doc): eager from op_record.json beside run_json, a
    compiled run from its Inductor provenance (analysis.run.attribution_split)."""
    from fusionlab.analysis.run import attribution_split
    from fusionlab.analysis.run.run_metrics import debug_dir, load_profile
    run = read_json(run_json) or {}
    sources = run.get("loop_sources") or {}
    if profile.endswith(".json.gz"):   # a trace kept gzipped (torch.profiler's .json.gz)
        from fusionlab.analysis.readers import torch_trace
        m = measured(torch_trace.load(profile))
    else:
        m = measured(load_profile(profile))
    if run.get("variant") == "eager":
        return eager(m, read_json(os.path.join(os.path.dirname(os.path.abspath(run_json)), OP_RECORD)), sources)
    from fusionlab.analysis.readers import inductor_logs
    graphs = inductor_logs.read(debug_dir(run_json, run))
    rows, per_iter, launches = split_loop(m, sources, attribution_split.listed(graphs))
    return finish(rows + attribution_split.compiled(per_iter, graphs, launches), m.total_us)


def coverage(rows: pd.DataFrame) -> dict:
    """Shares of a run's kernel time attributed to a module path of the model (`module`),
    to a source line of the model's (`source`: rows outside the model and the loop's parts
    count as neither) and placed on the training loop's own parts (`loop`: LOOP_MODULES)."""
    total = float(rows["time_us"].sum()) if len(rows) else 0.0
    if not total:
        return {"module": float("nan"), "source": float("nan"), "loop": float("nan")}
    placed = rows[~rows["module"].isin([UNATTRIBUTED, OUTSIDE, *LOOP_MODULES])]
    return {"module": float(placed["time_us"].sum()) / total,
            "source": float(placed.loc[placed["source"] != "", "time_us"].sum()) / total,
            "loop": float(rows.loc[rows["module"].isin(LOOP_MODULES), "time_us"].sum()) / total}


def main(run_json: str, profile: str | None, out_csv: str) -> pd.DataFrame:
    """attribution.csv of one run (COLUMNS); no rows for a run that is not ok or has no
    profile, and for a profile that cannot be read (ReportError's line printed)."""
    from fusionlab.analysis.readers.trace import ReportError
    from fusionlab.core.io import atomic_path
    run = read_json(run_json) or {}
    rows = pd.DataFrame(columns=COLUMNS)
    if run.get("status") == "ok" and profile and os.path.exists(profile):
        try:
            rows = attribute(run_json, profile)
        except ReportError as e:
            print(f"attribution: {e}", file=sys.stderr)
    with atomic_path(out_csv) as tmp:
        rows.to_csv(tmp, index=False)
    return rows
