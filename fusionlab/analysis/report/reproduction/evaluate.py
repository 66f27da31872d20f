"""Each claim of claims.yaml against one sweep: the measured value, the verdict and why.

evaluate(claims, sweep) -> one Result per claim, in the file's order.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

import yaml

from fusionlab.analysis.report.reproduction import verdict as V
from fusionlab.analysis.report.reproduction.measure import Sweep, ms_spread

CLAIMS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "claims.yaml")
NOISE_CV = 0.25   # timing windows noisier than this: a busy host, no time-based verdict
TIMED = ("ratio", "ordering", "threshold", "scaling", "steady")
COMPARES = ("ratio", "count", "ordering", "threshold", "launch", "traffic", "scaling", "steady")


@dataclass
class Result:
    claim: dict
    verdict: str
    measured: str = ""            # the measured value, with its CI, in words
    why: str = ""                 # the rule's reading, then what differs from the text
    absolute: str = ""            # absolute times here (ms), shown, never judged
    ratio: tuple | None = None    # (published, measured, lo, hi) for the figure
    notes: list = field(default_factory=list)


def load_claims(path: str = CLAIMS) -> list[dict]:
    """The claims, checked: each has the fields the evaluation reads."""
    with open(path) as f:
        claims = yaml.safe_load(f)["claims"]
    for c in claims:
        missing = [k for k in ("id", "source", "claim", "config", "published", "compare", "needs") if k not in c]
        if missing or c["compare"] not in COMPARES or c["needs"] not in ("gpu", "any"):
            raise ValueError(f"claim {c.get('id')!r}: missing {missing} or bad compare/needs")
    return claims


def published_text(c: dict) -> str:
    p = c["published"]
    v = p.get("value")
    if c["compare"] == "count":
        s = " -> ".join(f"{v[k]:g}" for k in v) + " kernels"
    elif c["compare"] == "ordering":
        t = p["times_ms"]
        s = " < ".join(f"{k} {t[k]:g}" for k in sorted(t, key=t.get)) + " ms"
    elif c["compare"] == "launch":
        s = f"launch {p['launch_api_us']:g} us, kernels {p['kernel_us']:g} us, API share {p['api_share']:.1%}"
    elif c["compare"] == "traffic":
        s = "reads BF+FH+3BH+2H+2B, writes 2BH+2B"
    elif c["compare"] == "scaling":
        s = "linear in layers"
    elif c["compare"] == "steady":
        s = "n x the time of one step"
    elif c["compare"] == "threshold":
        s = f"at most ~{c['tolerance']:g}x at batch {c['config']['batch']}"
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
    cfg = c["config"]
    variants = cfg["variants"]
    size = cfg.get("size", "default")
    d, where = sweep.pick(cfg["model"], variants, cfg["batch"], size, cfg["mode"])
    if c["compare"] == "scaling":
        res = _scaling(c, sweep)
    elif not len(d) or sweep.row(d, variants[0]) is None:
        res = Result(c, V.NOT_MEASURED, "", f"{cfg['model']} {variants[0]} not in this sweep ({cfg['mode']})"
                     if not len(d) else sweep.status(d, variants[0]))
    else:
        res = KINDS[c["compare"]](c, sweep, d)
    if c["compare"] in TIMED and res.verdict not in (V.NOT_MEASURED, V.NOT_ON_DEVICE):
        cv = _noise(sweep, c)
        if cv is not None and cv > NOISE_CV:
            res.notes.insert(0, f"read as {res.verdict}: {res.why}")
            res.verdict, res.why = V.NOT_MEASURED, (
                f"timing too noisy to judge: the runs' timing windows vary up to {cv:.0%} "
                f"(over {NOISE_CV:.0%}: a busy or shared host); run again on a quiet machine")
    if where and c["compare"] != "scaling" and res.verdict not in (V.NOT_MEASURED, V.NOT_ON_DEVICE):
        res.notes.append(where)
    if c.get("note") and res.verdict not in (V.NOT_MEASURED, V.NOT_ON_DEVICE):
        res.notes.append(c["note"])
    return res


def _noise(sweep: Sweep, c: dict):
    """The largest window CV (runs.csv untraced_wall_cv) of the claim's model and variants."""
    r, cfg = sweep.runs, c["config"]
    if "untraced_wall_cv" not in r:
        return None
    sel = r[(r["model"] == cfg["model"]) & r["variant"].isin(cfg["variants"]) & (r["status"] == "ok")]
    v = sel["untraced_wall_cv"].max() if len(sel) else None
    return V._num(v)


def _gpu_reason(c: dict) -> str:
    return {"ratio": "a speedup of GPU kernels", "launch": "CUDA launch calls and kernel durations (nsys)",
            "threshold": "compile's gain against GPU launch overhead"}.get(c["compare"], "GPU kernels")


def _abs(sweep: Sweep, d, variants) -> str:
    out = []
    for v in variants:
        r = sweep.row(d, v)
        if r is not None and V._num(r.get("wall_time_per_iter_ms")) is not None:
            out.append(f"{v} {float(r['wall_time_per_iter_ms']):.3g}")
    return " / ".join(out) + " ms" if out else ""


def _ci(v, lo, hi) -> str:
    return f"{v:.3g}x" + (f" [{lo:.3g}, {hi:.3g}]" if lo is not None and hi is not None else " (no CI)")


def _ratio(c, sweep, d) -> Result:
    ref, var = c["config"]["variants"][:2]
    s, lo, hi = sweep.speedup(d, var)
    if s is None:
        return Result(c, V.NOT_MEASURED, "", sweep.status(d, var))
    pub = c["published"]["value"]
    verdict, why = V.ratio(s, pub, c["tolerance"], lo, hi)
    return Result(c, verdict, _ci(s, lo, hi), why, _abs(sweep, d, [ref, var]), (pub, s, lo, hi))


def _count(c, sweep, d) -> Result:
    pub = c["published"]["value"]
    m = {}
    for v in pub:
        r = sweep.row(d, v)
        m[v] = V._num(r.get("kernels_per_iter")) if r is not None else None
    verdict, why = V.count(m, pub, c["tolerance"])
    ref, var = list(pub)
    ratio = None
    if m[ref] and m[var]:
        ratio = (pub[ref] / pub[var], m[ref] / m[var], None, None)
    text = " -> ".join(f"{m[v]:g}" if m[v] is not None else "-" for v in pub) + " kernels per iteration"
    return Result(c, verdict, text, why, "", ratio)


def _ordering(c, sweep, d) -> Result:
    pub = c["published"]["times_ms"]
    ms, spread, missing = {}, {}, []
    for v in pub:
        r = sweep.row(d, v)
        t = V._num(r.get("wall_time_per_iter_ms")) if r is not None else None
        if t is None:
            missing.append(sweep.status(d, v))
            continue
        ms[v] = t
        spread[v] = ms_spread(sweep.timing(r))
    verdict, why = V.ordering(ms, pub, spread)
    ref = c["config"]["variants"][0]
    fastest = min(pub, key=pub.get)
    ratio = None
    if ref in ms and fastest in ms:
        ratio = (pub[ref] / pub[fastest], ms[ref] / ms[fastest], None, None)
    text = " < ".join(f"{k} {ms[k]:.3g}" for k in sorted(ms, key=ms.get)) + " ms" if ms else ""
    res = Result(c, verdict, text, why, text, ratio)
    if missing:
        res.notes.append("not measured: " + "; ".join(missing))
    return res


def _threshold(c, sweep, d) -> Result:
    cfg = c["config"]
    var = cfg["variants"][1]
    small, lo, hi = sweep.speedup(d, var)
    by_batch = {}
    for b in cfg.get("batches", [cfg["batch"]]):
        db, _ = sweep.pick(cfg["model"], cfg["variants"], b, cfg.get("size", "default"), cfg["mode"])
        if len(db):
            s = sweep.speedup(db, var)[0]
            if s is not None:
                by_batch[int(db["batch"].iloc[0])] = s
    if small is None:
        return Result(c, V.NOT_MEASURED, "", sweep.status(d, var))
    verdict, why = V.threshold(small, by_batch, c["tolerance"])
    return Result(c, verdict, _ci(small, lo, hi), why, _abs(sweep, d, cfg["variants"]))


def _launch(c, sweep, d) -> Result:
    r = sweep.row(d, c["config"]["variants"][0])
    lu, ku = sweep.run_metric(r, "launch_api_us"), sweep.run_metric(r, "median_kernel_us")
    share = sweep.run_metric(r, "short_kernel_share")
    verdict, why = V.launch(lu, ku, share, c["tolerance"])
    api = sweep.api_share(r)
    res = Result(c, verdict, f"{lu / ku:.2g}x" if lu and ku else "", why,
                 f"launch {lu:.3g} us, kernel {ku:.3g} us" if lu and ku else "",
                 (c["published"]["value"], lu / ku, None, None) if lu and ku else None)
    if api is not None:
        res.notes.append(f"cudaLaunchKernel is {api:.1%} of this process's CUDA API time "
                         "(one-off module loads included: a 250-iteration process, not a long training loop)")
    return res


def _traffic(c, sweep, d) -> Result:
    cfg = c["config"]
    r = sweep.row(d, cfg["variants"][0])
    cost = sweep.cost(cfg["model"], int(r["batch"]), str(r.get("size") or "default"), cfg["mode"])
    if cost is None:
        return Result(c, V.NOT_MEASURED, "", "no costs.csv row")
    B, F, H = int(r["batch"]), cfg.get("feature", 1), _hidden(r, cfg)
    itemsize = {"float32": 4, "bfloat16": 2, "float16": 2}.get(str(r.get("dtype")), 4)
    formula = (B * F + F * H + 3 * B * H + 2 * H + 2 * B) + (2 * B * H + 2 * B)
    rows = (B * F + F * H + 3 * B * H + 2 * H + 2 * B) + (3 * B * H + 2 * B)
    elems = float(cost["bytes_unfused"]) / itemsize
    verdict, why = V.traffic(elems, formula, c["tolerance"])
    res = Result(c, verdict, f"{elems:.4g} elements (B={B}, H={H})", why)
    res.notes.append(f"the table's rows add up to {rows:g} elements (writes 3BH + 2B; its total line says 2BH + 2B)")
    return res


def _hidden(r, cfg) -> int:
    h = V._num(r.get("hidden"))
    return int(h) if h else cfg.get("hidden", 64)


def _scaling(c, sweep) -> Result:
    cfg = c["config"]
    sp = sweep.speedups
    d = sp[(sp["model"] == cfg["model"]) & (sp["variant"] == cfg["variants"][0]) & (sp["mode"] == cfg["mode"])
           & sp["status"].astype(str).str.contains("ok")] if len(sp) else sp
    axis = cfg["axis"]
    if not len(d) or axis not in d:
        return Result(c, V.NOT_MEASURED, "", f"{cfg['model']} {cfg['variants'][0]} not swept along {axis}")
    others = [a for a in ("dim", "hidden", "num_layers", "seq", "input_size") if a != axis and a in d]
    d = d.dropna(subset=[axis])
    batches = sorted(set(d["batch"]))
    b = min(batches, key=lambda x: abs(math.log(x / cfg["batch"])))
    d = d[d["batch"] == b]
    for a in others:  # the other axes at their most common value
        if d[a].notna().any():
            d = d[d[a] == d[a].mode().iloc[0]]
    x, y = list(d[axis].astype(float)), list(d["wall_time_per_iter_ms"].astype(float))
    verdict, why = V.scaling(x, y, c["tolerance"])
    k = V.marginal_exponent(x, y) if len(x) >= 3 else float("nan")
    ratio = (1.0, k, None, None) if k == k and k > 0 else None
    res = Result(c, verdict, f"exponent {k:.2f} of the increment" if k == k else "", why,
                 ", ".join(f"{int(a)}: {t:.3g}" for a, t in sorted(zip(x, y))) + " ms" if x else "", ratio)
    if b != cfg["batch"]:
        res.notes.append(f"measured at batch {b} (the sweep's nearest)")
    return res


def _steady(c, sweep, d) -> Result:
    r = sweep.row(d, c["config"]["variants"][0])
    cv = sweep.run_metric(r, "untraced_wall_cv")
    if cv is None:
        cv = sweep.timing(r).get("window_cv")
    verdict, why = V.steady(cv, c["tolerance"])
    return Result(c, verdict, f"window CV {cv:.1%}" if cv is not None else "", why)


KINDS = {"ratio": _ratio, "count": _count, "ordering": _ordering, "threshold": _threshold,
         "launch": _launch, "traffic": _traffic, "steady": _steady}
