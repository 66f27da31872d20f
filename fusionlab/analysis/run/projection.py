"""GPU-side projection of each range: the GPU work its launches caused, however long it
runs after the range closes (nsys's nvtx_gpu_proj_trace / nvtx_gpu_proj_sum), and busy
and idle shares over the window that holds that work.

Per range instance, with kernels attributed as in analysis.run.metrics (a kernel belongs
to the instance whose window holds its launch call; `process` or `same_thread`):
- the CPU window: the range's own start and end (the fields of analysis.run.metrics);
- the projection: first kernel start to last kernel end of the instance's kernels
  (nsys's Projected Duration; an instance without kernels has none);
- the work window: the CPU window where the instance's kernels all end inside it (a
  range that waits for its work, as a synchronized one does), else the projection (a
  range that only launches its work: the time before its first kernel is then spent on
  the host or behind other work already queued, neither of which is this range's).
Fields (summed over instances unless per instance):
- cpu_ms_per_instance: range duration / instances.
- gpu_proj_ms, gpu_proj_instances, gpu_proj_ms_per_instance: summed projected duration,
  the instances with kernels, and the mean over those (nvtx_gpu_proj_sum's Total Proj
  Time, Range Instances, Proj Avg; nsys also counts memory copies and memsets as GPU ops,
  these count kernels only).
- gpu_ops_per_instance: kernels / instances.
- gpu_after_range_ms: time the instances' kernels ran past the range end (last kernel
  end - range end, where positive); instances_gpu_after_range: how many instances.
- window: which work window the window fields use: "range" (every instance's CPU
  window), "projection" (every instance's projection) or "mixed".
- work_window_ms: the work windows summed.
- window_busy_fraction: union of the kernel intervals (not clipped to the range) / work
  window; window_idle_{host_wait,kernel_wait,other}_frac: analysis.run.metrics' idle
  breakdown over the work windows (a CPU window's gap before its first kernel and its
  tail after the last one count as there; a projection has neither); the four add up to 1.
- window_other_work_frac: the share of the work windows in which the GPU ran other work of
  the range's process and none of the range's kernels (analysis.run.busy_at; counted on
  CPU windows, none in a projection); part of the idle shares, not beside them.
- window_bound: fields.verdict over the work windows: "gpu", "cpu", "waiting on the GPU"
  (other work fills the window more than the range's own), or "no GPU work" (no kernels of
  its own and the GPU mostly idle).
For a range whose kernels all end inside it, the window fields equal gpu_busy_fraction,
idle_*_frac and bound of analysis.run.metrics.
"""
from __future__ import annotations

import numpy as np

from fusionlab.analysis.readers.trace import Chunks, Trace
from fusionlab.analysis.run import busy_at
from fusionlab.analysis.run import fields as F
from fusionlab.analysis.run import stream

NONE_END = np.iinfo(np.int64).min


CATS = ("host_wait", "kernel_wait", "other")


class Projected(stream.Target):
    """stream.Target that keeps, per instance, its projection and its GPU timeline over
    either work window (module doc)."""

    def __init__(self, rs, attributions):
        super().__init__(rs, attributions, ())
        n = len(self.lo)
        for v in self.views.values():
            v.first = np.full(n, np.iinfo(np.int64).max)
            v.last = np.full(n, NONE_END)
            v.count = np.zeros(n, np.int64)
            v.ibusy = np.zeros(n, np.int64)
            v.inner = np.zeros((n, 3), np.int64)   # gaps between the instance's kernels, by CATS
            v.lead = np.zeros((n, 3), np.int64)    # range start to its first kernel, by CATS

    def timeline(self, v, rows, inst, s, e, ls) -> None:
        o = np.argsort(inst, kind="stable")
        rows, g = rows[o], inst[o]
        lo = self.lo[g]
        sc, ec = np.maximum(s[rows], lo), e[rows]
        carry = v.carry[g]
        first = np.r_[True, g[1:] != g[:-1]]
        lead = first & (v.count[g] == 0)
        inc = stream._segmented_cummax(np.maximum(ec, carry), first)
        prev = np.empty_like(inc)
        prev[1:] = inc[:-1]
        prev[first] = carry[first]
        gap = np.maximum(sc - prev, 0)
        host = (gap > 0) & (ls[rows] > prev)
        kwait = (gap > 0) & ~host & (gap <= self.kernel_wait_ns)
        cat = np.where(host, 0, np.where(kwait, 1, 2))
        np.add.at(v.lead, (g[lead], cat[lead]), gap[lead])
        np.add.at(v.inner, (g[~lead], cat[~lead]), gap[~lead])
        np.add.at(v.ibusy, g, np.maximum(0, ec - np.maximum(sc, prev)))
        np.minimum.at(v.first, g, s[rows])
        np.maximum.at(v.last, g, e[rows])
        np.add.at(v.count, g, 1)
        last = np.r_[g[1:] != g[:-1], True]
        v.carry[g[last]] = inc[last]

    def fields(self, a: str) -> dict:
        """The module doc's fields under attribution a."""
        v = self.views[a]
        n = len(self.lo)
        has = v.count > 0
        cpu = int((self.hi - self.lo).sum())
        proj = int((v.last[has] - v.first[has]).sum())
        after = np.where(has, v.last - self.hi, 0)
        out_ = after > 0                      # work past the range end: the projection window
        window = int(np.where(out_, v.last - v.first, self.hi - self.lo).sum())
        tail = np.where(out_, 0, np.maximum(self.hi - v.carry, 0))
        idle = v.inner.sum(axis=0) + v.lead[~out_].sum(axis=0)
        idle[2] += int(tail.sum())
        out = {"cpu_ms_per_instance": cpu / 1e6 / n,
               "gpu_proj_ms": proj / 1e6,
               "gpu_proj_instances": int(has.sum()),
               "gpu_proj_ms_per_instance": proj / 1e6 / int(has.sum()) if has.any() else None,
               "gpu_ops_per_instance": int(v.count.sum()) / n,
               "gpu_after_range_ms": int(after[out_].sum()) / 1e6,
               "instances_gpu_after_range": int(out_.sum()),
               "window": "range" if not out_.any() else "projection" if out_.all() else "mixed",
               "work_window_ms": window / 1e6,
               "window_busy_fraction": int(v.ibusy.sum()) / window if window else None}
        for k, x in zip(CATS, idle.tolist()):
            out[f"window_idle_{k}_frac"] = x / window if window else None
        other = None
        if self.occupied is not None:     # known over CPU windows only: a projection adds none
            other = int(np.where(out_, 0, self.occupied - v.ibusy).sum())
            out["window_other_work_frac"] = other / window if window else None
        if window:
            out["window_bound"] = F.verdict(int(v.count.sum()), int(v.ibusy.sum()), int(idle[0]), other or 0, window)
        return out


def projections(report, targets, attributions=F.ATTRIBUTIONS, kernel_wait_us: float = F.KERNEL_WAIT_US) -> dict:
    """{key: {attribution: fields}} for ranges `targets` ((name, domain) pairs) of a
    streamed nsys export or a Trace, in one pass over its kernels. A range without
    instances gets {}; on a CPU profile (no GPU) every range gets {}."""
    if isinstance(report, Trace):
        report = Chunks(report)
    live = {}
    for name, domain in targets:
        rs = F.instances(report, name, domain)
        if len(rs) and report.device == "cuda":
            live[(name, domain)] = Projected(rs, attributions)
            live[(name, domain)].kernel_wait_ns = kernel_wait_us * 1e3
    if live:
        occupied = busy_at.BusyAt(stream._queries(live.values()))
        for c in report.kernel_chunks():
            for t in live.values():
                t.kernels(c)
            occupied.kernels(c)
        occupied.finish()
        for t in live.values():
            t.occupied = occupied.between(t.pid, t.lo, t.hi)
    return {F.key(n, d): ({a: live[(n, d)].fields(a) for a in attributions} if (n, d) in live
                          else {a: {} for a in attributions}) for n, d in targets}
