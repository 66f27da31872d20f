"""What the claims' readings share: a claim's Result, the default noise bounds, a
sweep's speedup as judged (paired wall time, or kernel time where host-bound) with its
interval over processes, and a threshold claim's parts.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from fusionlab.analysis.report.reproduction import interval as I
from fusionlab.analysis.report.reproduction import verdict as V
from fusionlab.analysis.report.reproduction.measure import Sweep

NOISE = {"between_process_cv": 0.10, "within_process_cv": 0.25, "host_bound_share": 0.5}


@dataclass
class Result:
    claim: dict
    verdict: str
    measured: str = ""            # the measured value, with its interval, in words
    why: str = ""                 # the rule's reading, from the numbers it used
    absolute: str = ""            # absolute times here (ms), shown, never judged
    plot: dict | None = None      # what the figure draws (render.figure)
    notes: list = field(default_factory=list)
    spread: float | None = None   # the largest between-process spread (sd / mean) of its times


def per_process(c, sweep) -> list:
    return [r for r in sweep.claims.get(c["id"]) or [] if isinstance(r, dict)]


def _ci_text(ci) -> str:
    return f" {ci.text()}" if ci is not None else f" ({V.ONE})"


def speedup(sweep: Sweep, d, ref: str, var: str, host_bound_share: float = 0.5) -> dict:
    """The variant's speedup over the reference, as judged: the paired speedup (eager
    timed in the variant's own process) with its t-interval over the processes; where
    either side is host-bound, the kernel-time speedup with its Welch interval instead.
    {value, ci, what, beside (the other reading, in words), host} or {} where none."""
    r, e = sweep.row(d, var), sweep.row(d, ref)
    if r is None:
        return {}
    paired = [x for x in sweep.per_process(r, "paired_speedup") if x]
    if len(paired) >= 2:
        s, ci = I.geomean(paired), I.t_interval(paired)
    else:
        s = V._num(r.get("speedup_paired"))
        s = s if s is not None else V._num(r.get("speedup_wall"))
        ci = None
    hs = [h for h in ((sweep.host_share(x) if x is not None else None) for x in (e, r)) if h is not None]
    host = max(hs) if hs else None
    wall = f"{s:.3g}x{_ci_text(ci)} paired wall time" if s else ""
    if host is not None and host > host_bound_share and e is not None:
        ke, kv = sweep.kernel_ms(e), sweep.kernel_ms(r)
        if ke and kv:
            k = I.geomean(ke) / I.geomean(kv)
            kci = I.ratio_interval(ke, kv)
            return {"value": k, "ci": kci, "host": host,
                    "what": f"kernel-time speedup (host-bound: exposed host time {host:.0%} of the wall time; "
                            "the GPU-side quantity is judged)",
                    "beside": f"wall time, shown beside: {wall}"}
    if s is None:
        return {}
    return {"value": s, "ci": ci, "host": host, "what": f"paired wall-time speedup (eager timed in {var}'s process)",
            "beside": ""}


def _times(sweep: Sweep, d, ref: str, var: str) -> str:
    """The two runs' own wall times (separate processes) and their ratio."""
    a, b = (sweep.row(d, v) for v in (ref, var))
    ta = V._num(a.get("wall_time_per_iter_ms")) if a is not None else None
    tb = V._num(b.get("wall_time_per_iter_ms")) if b is not None else None
    if ta is None or tb is None:
        return ""
    return f"{ref} {ta:.3g} / {var} {tb:.3g} ms in their own processes = {ta / tb:.3g}x (shown, not judged)"


def _band(c) -> tuple:
    if c.get("band"):
        return float(c["band"][0]), float(c["band"][1])
    p, t = c["published"]["value"], c["tolerance"]
    return p / t, p * t


def threshold_parts(c, by: dict) -> Result:
    """A threshold claim from {batch: (speedup, Interval | None, processes)}: at most the
    tolerance at the claim's batch; the other batches shown, not judged."""
    small_b, bound = int(c["config"]["batch"]), c["tolerance"]
    s = by.get(small_b, (None, None, 0))
    verdict, why = V.at_most(s[0], bound, s[1], f" at batch {small_b}")
    text = ", ".join(f"{b}: {v[0]:.3g}x{_ci_text(v[1])}" for b, v in sorted(by.items()) if v[0] is not None)
    rows = [(f"{c['id']} @{b}" + ("" if b == small_b else " (shown)"), None, (1e-3, bound), v[0],
             v[1].lo if v[1] else None, v[1].hi if v[1] else None, verdict if b == small_b else V.NOT_TESTED)
            for b, v in sorted(by.items()) if v[0] is not None]
    return Result(c, verdict, f"paired speedups by batch {text}" if text else "", why, "",
                  {"type": "ratio", "rows": rows})
