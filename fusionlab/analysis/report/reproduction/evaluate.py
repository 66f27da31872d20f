"""Each claim of claims.yaml against one sweep: the measured value, the verdict and why.

evaluate(claims, sweep) -> one Result per claim, in the file's order. The reason is
computed from the numbers the verdict used; a proxy (another configuration, mode or
quantity than the claim's) is shown in the notes and the verdict is not tested.

Intervals are over processes (interval.py): a speedup's is the t-interval of the
processes' paired speedups (on logs); a kernel-time speedup's the Welch interval of the
two sides' processes. Where either side of a ratio is host-bound (exposed host time over
the claims file's host_bound_share of the wall time), the kernel-time speedup is judged
and the wall-time one shown beside it, and the reason says so.
"""
from __future__ import annotations

import hashlib
import os

import yaml

from fusionlab.analysis.report.reproduction import interval as I
from fusionlab.analysis.report.reproduction import verdict as V
from fusionlab.analysis.report.reproduction.measure import Sweep
from fusionlab.analysis.report.reproduction.measured import MEASURED
from fusionlab.analysis.report.reproduction.reading import (NOISE, Result, _band, _ci_text, _times, per_process,
                                                            speedup, threshold_parts)

CLAIMS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "claims.yaml")
COMPARES = ("ratio", "ratios", "count", "matches", "ordering", "threshold", "launch", "traffic", "scaling")


def sha256(path: str = CLAIMS) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def load_claims(path: str = CLAIMS) -> list[dict]:
    """The claims, checked: each has the fields the evaluation reads; each carries the
    file's noise settings (`noise`)."""
    with open(path) as f:
        doc = yaml.safe_load(f)
    noise = {**NOISE, **(doc.get("noise") or {})}
    claims = doc["claims"]
    for c in claims:
        missing = [k for k in ("id", "source", "claim", "config", "published", "compare", "needs") if k not in c]
        if missing or c["compare"] not in COMPARES or c["needs"] not in ("gpu", "any"):
            raise ValueError(f"claim {c.get('id')!r}: missing {missing} or bad compare/needs")
        c["noise"] = noise
    return claims


def published_text(c: dict) -> str:
    p, k = c["published"], c["compare"]
    v = p.get("value")
    if k == "count":
        s = " -> ".join(f"{v[x]:g}" for x in v) + " per iteration"
    elif k == "ratios":
        s = ", ".join(f"{x} {r:g}x" for x, r in v.items())
    elif k == "ordering":
        t = p["times_ms"]
        s = " < ".join(f"{x} {t[x]:g}" for x in sorted(t, key=t.get)) + " ms"
    elif k == "launch":
        s = f"launch {p['launch_api_us']:g} us, kernels {p['kernel_us']:g} us, API share {p['api_share']:.1%}"
    elif k == "traffic":
        s = "reads BF+FH+3BH+2H+2B, writes 2BH+2B"
    elif k == "scaling":
        s = f"time ~ {c['config']['axis']}^{c.get('exponent', 1):g}"
    elif k == "threshold":
        s = f"at most ~{c['tolerance']:g}x at batch {c['config']['batch']}"
    elif k == "matches":
        s = "the same output"
    elif c.get("band"):
        a, b = c["band"]
        s = f"{a:g}-{b:g}x" if b != float("inf") else f"faster (at least {a:g}x)"
    else:
        s = f"{v:.3g}x"
        if p.get("times_ms"):
            s += " (" + " -> ".join(f"{x:g}" for x in p["times_ms"].values()) + " ms)"
    return f"{s} ({p.get('hardware', 'not named')})"


def evaluate(claims: list[dict], sweep: Sweep) -> list[Result]:
    return [evaluate_one(c, sweep) for c in claims]


def evaluate_one(c: dict, sweep: Sweep) -> Result:
    if c["needs"] == "gpu" and sweep.device != "cuda":
        return Result(c, V.NOT_ON_DEVICE, "", "needs a GPU: " + _gpu_reason(c))
    if c.get("measure"):
        res = MEASURED[c["measure"]["kind"]](c, sweep)
    else:
        cfg = c["config"]
        d, where = sweep.pick(cfg["model"], cfg["variants"], cfg["batch"], cfg.get("size", "default"), cfg["mode"])
        if not len(d) or sweep.row(d, cfg["variants"][0]) is None:
            why = (f"{cfg['model']} {cfg['variants'][0]} not in this sweep ({cfg['mode']})" if not len(d)
                   else sweep.status(d, cfg["variants"][0]))
            d2, _ = sweep.pick(cfg["model"], cfg["variants"], cfg["batch"], cfg.get("size", "default"),
                               (c.get("proxy") or {}).get("mode", cfg["mode"]))
            res = Result(c, V.NOT_TESTED, "", why)
            if c.get("proxy") and len(d2) and sweep.row(d2, cfg["variants"][0]) is not None:
                res = _proxy(KINDS[c["compare"]](c, sweep, d2), c["proxy"]["why"])
        else:
            res = KINDS[c["compare"]](c, sweep, d)
            if where:   # another batch or size than the claim's
                res = _proxy(res, where)
    if res.verdict in (V.HOLDS, V.FAILS, V.INCONCLUSIVE) and c.get("measure"):
        res = noise_gate(c, sweep, res)
    if c.get("note") and res.verdict != V.NOT_ON_DEVICE:
        res.notes.append(c["note"])
    return res


def noise_gate(c: dict, sweep: Sweep, res: Result) -> Result:
    """A claim measured in its own processes is judged only where its trials (within a
    process) and its processes (between them) agree to the claims file's bounds."""
    noise = c.get("noise") or NOISE
    within = [V._num(x) for r in per_process(c, sweep) for x in (r.get("cv") or [])]
    within = max([x for x in within if x is not None], default=None)
    if within is not None and within > noise["within_process_cv"]:
        return _proxy(res, f"timing too noisy to judge: its processes' trials vary up to {within:.0%} "
                           f"(over {noise['within_process_cv']:.0%}: a busy or shared host); run again on a quiet "
                           "machine", "")
    if res.spread is not None and res.spread > noise["between_process_cv"]:
        return _proxy(res, f"processes disagree: their times differ by up to {res.spread:.0%} (sd / mean; over "
                           f"{noise['between_process_cv']:.0%}): host drift between processes; run again on a "
                           "quiet machine", "")
    return res


def _proxy(res: Result, why: str, prefix: str = "not the claim's configuration: ") -> Result:
    """A reading of something other than the claim (or of a noisy host): its value
    shown, not judged."""
    if res.verdict in (V.HOLDS, V.FAILS, V.INCONCLUSIVE):
        res.notes.insert(0, f"would read {res.verdict}: {res.why}")
    elif res.why:
        res.notes.insert(0, res.why)
    res.verdict, res.why = V.NOT_TESTED, prefix + why
    if res.plot and res.plot["type"] == "ratio":   # drawn as what it is: not tested
        res.plot["rows"] = [(f"{row[0]} (not judged)", *row[1:6], V.NOT_TESTED) for row in res.plot["rows"]]
    return res


def _gpu_reason(c: dict) -> str:
    return {"ratio": "a speedup of GPU kernels", "ratios": "speedups of GPU kernels",
            "launch": "CUDA launch calls and kernel durations (nsys)",
            "threshold": "compile's gain against GPU launch overhead",
            "traffic": "Nsight Compute's bytes of the GPU kernels"}.get(c["compare"], "GPU kernels")


def _ratio(c, sweep, d) -> Result:
    ref, var = c["config"]["variants"][:2]
    sp = speedup(sweep, d, ref, var, c.get("noise", NOISE)["host_bound_share"])
    if not sp:
        return Result(c, V.NOT_TESTED, "", sweep.status(d, var))
    pub = c["published"].get("value")
    verdict, why = V.ratio(sp["value"], pub, c["tolerance"], sp["ci"], c.get("band"))
    ci = sp["ci"]
    res = Result(c, verdict, f"{sp['value']:.3g}x{_ci_text(ci)}, {sp['what']}", why, _times(sweep, d, ref, var),
                 {"type": "ratio", "rows": [(c["id"], pub, _band(c), sp["value"], ci.lo if ci else None,
                                             ci.hi if ci else None, verdict)]})
    if sp["beside"]:
        res.notes.append(sp["beside"])
    return res


def _ratios(c, sweep, d) -> Result:
    """Several variants' ratios over the reference, each against published x/ tolerance."""
    ref = c["config"]["variants"][0]
    parts, rows, got = [], [], []
    for var, pub in c["published"]["value"].items():
        sp = speedup(sweep, d, ref, var, c.get("noise", NOISE)["host_bound_share"])
        if not sp:
            parts.append((var, V.NOT_TESTED, sweep.status(d, var)))
            continue
        v, why = V.ratio(sp["value"], pub, c["tolerance"], sp["ci"])
        parts.append((var, v, why))
        ci = sp["ci"]
        got.append(f"{var} {sp['value']:.3g}x{_ci_text(ci)}")
        rows.append((f"{c['id']} {var}", pub, (pub / c["tolerance"], pub * c["tolerance"]), sp["value"],
                     ci.lo if ci else None, ci.hi if ci else None, v))
    verdict, why = V.compound(parts)
    return Result(c, verdict, "; ".join(got), why, "", {"type": "ratio", "rows": rows})


def _count(c, sweep, d) -> Result:
    pub = c["published"]["value"]
    m = {}
    for v in pub:
        r = sweep.row(d, v)
        m[v] = V._num(r.get("kernels_per_iter")) if r is not None else None
    verdict, why = V.count(m, pub, c["tolerance"])
    unit = " kernels per iteration" if sweep.device == "cuda" else " operators per iteration (CPU)"
    text = " -> ".join(f"{m[v]:g}" if m[v] is not None else "-" for v in pub) + unit
    return Result(c, verdict, text, why, "", {"type": "count", "published": dict(pub), "measured": m})


def _matches(c, sweep, d) -> Result:
    """The variant's output against eager's (the runner checks every variant before it
    times it): holds where it matched, does not hold where it did not."""
    var = c["config"]["variants"][1]
    rows = d[d["variant"] == var] if len(d) else d
    if not len(rows):
        return Result(c, V.NOT_TESTED, "", f"{var} not swept")
    r = rows.iloc[0]
    err = V._num(r.get("max_abs_err"))
    text = f"{var}: {r['status']}" + (f", largest absolute difference {err:.3g}" if err is not None else "")
    if str(r["status"]) == "ok":
        return Result(c, V.HOLDS, text, f"{var}'s output matches eager's within the runner's tolerance")
    if str(r["status"]) == "incorrect":
        return Result(c, V.FAILS, text, f"{var}'s output differs from eager's beyond the runner's tolerance")
    return Result(c, V.NOT_TESTED, text, sweep.status(d, var))


def _ordering(c, sweep, d) -> Result:
    pub = c["published"]["times_ms"]
    ms, missing = {}, []
    for v in pub:
        r = sweep.row(d, v)
        t = V._num(r.get("wall_time_per_iter_ms")) if r is not None else None
        if t is None:
            missing.append(sweep.status(d, v))
            continue
        each = [x for x in sweep.per_process(r, "wall_time_per_iter_ms") if x]
        ms[v] = (I.geomean(each), I.t_interval(each)) if len(each) >= 2 else (t, None)
    verdict, why = V.ordering(ms, pub, c.get("equal"), c.get("equal_tolerance", 1.05))
    text = "; ".join(f"{k} {ms[k][0]:.3g} ms{_ci_text(ms[k][1])}" for k in sorted(ms, key=lambda k: ms[k][0]))
    res = Result(c, verdict, text, why, "", {"type": "ordering", "published": dict(pub),
                                             "measured": {k: v[0] for k, v in ms.items()}})
    if missing:
        res.notes.append("not measured: " + "; ".join(missing))
    return res


def _threshold(c, sweep, d) -> Result:
    """The threshold claim from the sweep's paired speedups at the claim's batch."""
    cfg = c["config"]
    ref, var = cfg["variants"][:2]
    by = {}
    for b in cfg.get("batches", [int(cfg["batch"])]):
        db, where = sweep.pick(cfg["model"], cfg["variants"], b, cfg.get("size", "default"), cfg["mode"])
        if len(db) and not where:
            sp = speedup(sweep, db, ref, var, c.get("noise", NOISE)["host_bound_share"])
            if sp:
                by[b] = (sp["value"], sp["ci"], 0)
    res = threshold_parts(c, by)
    res.absolute = _times(sweep, d, ref, var)
    return res


def _launch(c, sweep, d) -> Result:
    r = sweep.row(d, c["config"]["variants"][0])
    lu, ku = sweep.run_metric(r, "launch_api_us"), sweep.run_metric(r, "median_kernel_us")
    share = sweep.run_metric(r, "short_kernel_share")
    verdict, why = V.launch(lu, ku, share, c["tolerance"])
    api = sweep.api_share(r)
    res = Result(c, verdict, f"{lu / ku:.2g}x" if lu and ku else "", why,
                 f"launch {lu:.3g} us, kernel {ku:.3g} us" if lu and ku else "",
                 {"type": "ratio", "rows": [(c["id"], None, (1.0, 1e3), lu / ku, None, None, verdict)]}
                 if lu and ku else None)
    if api is not None:
        res.notes.append(f"cudaLaunchKernel is {api:.1%} of this process's CUDA API time "
                         "(one-off module loads included: a 250-iteration process, not a long training loop)")
    return res


KINDS = {"ratio": _ratio, "ratios": _ratios, "count": _count, "matches": _matches, "ordering": _ordering,
         "threshold": _threshold, "launch": _launch}
