"""Each claim of claims.yaml against one sweep: the measured value, the verdict and why.

evaluate(claims, sweep) -> one Result per claim, in the file's order. The reason is
computed from the numbers the verdict used; a proxy (another configuration, mode or
quantity than the claim's) is shown in the notes and the verdict is not tested.
"""
from __future__ import annotations

import os
import statistics
from dataclasses import dataclass, field

import yaml

from fusionlab.analysis.report.reproduction import verdict as V
from fusionlab.analysis.report.reproduction.measure import Sweep, ms_spread
from fusionlab.analysis.sweep.stats import median_ci

CLAIMS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "claims.yaml")
NOISE_CV = 0.25   # timing windows noisier than this: a busy host, no time-based verdict
TIMED = ("ratio", "ordering", "threshold")
COMPARES = ("ratio", "count", "ordering", "threshold", "launch", "traffic", "scaling")


@dataclass
class Result:
    claim: dict
    verdict: str
    measured: str = ""            # the measured value, with its interval, in words
    why: str = ""                 # the rule's reading, from the numbers it used
    absolute: str = ""            # absolute times here (ms), shown, never judged
    plot: dict | None = None      # what the figure draws (render.figure)
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
    p, k = c["published"], c["compare"]
    v = p.get("value")
    if k == "count":
        s = " -> ".join(f"{v[x]:g}" for x in v) + " kernels"
    elif k == "ordering":
        t = p["times_ms"]
        s = " < ".join(f"{x} {t[x]:g}" for x in sorted(t, key=t.get)) + " ms"
    elif k == "launch":
        s = f"launch {p['launch_api_us']:g} us, kernels {p['kernel_us']:g} us, API share {p['api_share']:.1%}"
    elif k == "traffic":
        s = "reads BF+FH+3BH+2H+2B, writes 2BH+2B"
    elif k == "scaling":
        s = f"linear in {c['config']['axis']}"
    elif k == "threshold":
        s = f"at most ~{c['tolerance']:g}x at batch {c['config']['batch']}, more at larger batches"
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
    # a claim measured by its own trials (fusionlab.bench.claims) is judged only on a quiet
    # host; a sweep's ratio is judged by its interval over processes, which holds the noise
    if res.verdict in (V.HOLDS, V.FAILS) and c.get("measure"):
        cv = _measured_noise(sweep, c)
        what = "its processes' trials"
        if cv is not None and cv > NOISE_CV:
            res = _proxy(res, f"timing too noisy to judge: {what} vary up to {cv:.0%} "
                              f"(over {NOISE_CV:.0%}: a busy or shared host); run again on a quiet machine", "")
    if c.get("note") and res.verdict != V.NOT_ON_DEVICE:
        res.notes.append(c["note"])
    return res


def _proxy(res: Result, why: str, prefix: str = "not the claim's configuration: ") -> Result:
    """A reading of something other than the claim (or of a busy host): its value shown,
    not judged."""
    if res.verdict in (V.HOLDS, V.FAILS):
        res.notes.insert(0, f"would read {res.verdict}: {res.why}")
    elif res.why:
        res.notes.insert(0, res.why)
    res.verdict, res.why = V.NOT_TESTED, prefix + why
    if res.plot and res.plot["type"] == "ratio":   # drawn as what it is: not tested
        res.plot["rows"] = [(f"{row[0]} (not judged)", *row[1:6], V.NOT_TESTED) for row in res.plot["rows"]]
    return res


def _measured_noise(sweep: Sweep, c: dict):
    """The largest coefficient of variation (`cv`) of the trials or windows in the claim's
    own processes (fusionlab.bench.claims), or None where none was recorded."""
    cvs = [V._num(x) for r in _per_process(c, sweep) for x in (r.get("cv") or [])]
    cvs = [x for x in cvs if x is not None]
    return max(cvs) if cvs else None


def _gpu_reason(c: dict) -> str:
    return {"ratio": "a speedup of GPU kernels", "launch": "CUDA launch calls and kernel durations (nsys)",
            "threshold": "compile's gain against GPU launch overhead",
            "traffic": "Nsight Compute's bytes of the GPU kernels"}.get(c["compare"], "GPU kernels")


def _times(sweep: Sweep, d, ref: str, var: str) -> str:
    """The two runs' own wall times (separate processes) and their ratio."""
    a, b = (sweep.row(d, v) for v in (ref, var))
    ta = V._num(a.get("wall_time_per_iter_ms")) if a is not None else None
    tb = V._num(b.get("wall_time_per_iter_ms")) if b is not None else None
    if ta is None or tb is None:
        return ""
    return f"{ref} {ta:.3g} / {var} {tb:.3g} ms in their own processes = {ta / tb:.3g}x (shown, not judged)"


def _speedup(sweep: Sweep, d, var: str) -> tuple:
    """(speedup, lo, hi, n): the paired speedup (eager timed in the variant's process), its
    interval over repeats (processes); none from one process."""
    r = sweep.row(d, var)
    if r is None:
        return None, None, None, 0
    s = V._num(r.get("speedup_paired"))
    if s is None:
        s = V._num(r.get("speedup_wall"))
        lo, hi = V._num(r.get("speedup_wall_lo")), V._num(r.get("speedup_wall_hi"))
    else:
        lo, hi = V._num(r.get("speedup_paired_lo")), V._num(r.get("speedup_paired_hi"))
    n = int(V._num(r.get("repeats_ok")) or 1)
    return s, (lo if n > 1 else None), (hi if n > 1 else None), n


def _ratio(c, sweep, d) -> Result:
    ref, var = c["config"]["variants"][:2]
    s, lo, hi, n = _speedup(sweep, d, var)
    if s is None:
        return Result(c, V.NOT_TESTED, "", sweep.status(d, var))
    pub, tol = c["published"]["value"], c["tolerance"]
    verdict, why = V.ratio(s, pub, tol, lo, hi)
    ci = f" [{lo:.3g}, {hi:.3g}] over {n} processes" if lo is not None else " (one process)"
    return Result(c, verdict, f"{s:.3g}x{ci}, paired (eager timed in {var}'s process)", why, _times(sweep, d, ref, var),
                  {"type": "ratio", "rows": [(c["id"], pub, (pub / tol, pub * tol), s, lo, hi, verdict)]})


def _count(c, sweep, d) -> Result:
    pub = c["published"]["value"]
    m = {}
    for v in pub:
        r = sweep.row(d, v)
        m[v] = V._num(r.get("kernels_per_iter")) if r is not None else None
    verdict, why = V.count(m, pub, c["tolerance"])
    text = " -> ".join(f"{m[v]:g}" if m[v] is not None else "-" for v in pub) + " kernels per iteration"
    return Result(c, verdict, text, why, "", {"type": "count", "published": dict(pub), "measured": m})


def _ordering(c, sweep, d) -> Result:
    pub = c["published"]["times_ms"]
    ms, spread, missing = {}, {}, []
    for v in pub:
        r = sweep.row(d, v)
        t = V._num(r.get("wall_time_per_iter_ms")) if r is not None else None
        if t is None:
            missing.append(sweep.status(d, v))
            continue
        ms[v], spread[v] = t, ms_spread(sweep.timing(r))
    verdict, why = V.ordering(ms, pub, spread)
    text = " < ".join(f"{k} {ms[k]:.3g}" for k in sorted(ms, key=ms.get)) + " ms" if ms else ""
    res = Result(c, verdict, text, why, "", {"type": "ordering", "published": dict(pub), "measured": ms})
    if missing:
        res.notes.append("not measured: " + "; ".join(missing))
    return res


def _threshold(c, sweep, d) -> Result:
    """The compound "little at the small batch, more at the larger ones", from the sweep's
    paired speedups at each batch: one part per batch."""
    cfg = c["config"]
    by = {}
    for b in cfg.get("batches", [int(cfg["batch"])]):
        db, where = sweep.pick(cfg["model"], cfg["variants"], b, cfg.get("size", "default"), cfg["mode"])
        if len(db) and not where:
            by[b] = _speedup(sweep, db, cfg["variants"][1])
    res = _threshold_parts(c, by)
    res.absolute = _times(sweep, d, *cfg["variants"][:2])
    return res


def _threshold_parts(c, by: dict) -> Result:
    """Parts of a threshold claim from {batch: (speedup, lo, hi, processes)}: at most the
    tolerance at the small batch, more at each larger one."""
    cfg, bound = c["config"], c["tolerance"]
    small_b = int(cfg["batch"])
    s = by.get(small_b, (None,) * 4)
    parts = [(f"batch {small_b}", *V.at_most(s[0], bound, s[1], s[2], f" at batch {small_b}"))]
    for b in cfg.get("batches", [])[1:]:
        g = by.get(b, (None,) * 4)
        parts.append((f"batch {b}", *V.greater(s[0], g[0], f"at batch {small_b}", f"at batch {b}", g[1], g[2])))
    verdict, why = V.compound(parts)
    text = ", ".join(f"{b}: {v[0]:.3g}x" + (f" [{v[1]:.3g}, {v[2]:.3g}]" if v[1] is not None else "")
                     for b, v in sorted(by.items()) if v[0] is not None)
    n = max([v[3] for v in by.values()] or [0])
    part = {int(name.split()[-1]): v for name, v, _ in parts}
    rows = [(f"{c['id']} @{b}", None, (1e-3, bound) if b == small_b else (s[0] or 1e-3, 1e3), v[0], v[1], v[2], part[b])
            for b, v in sorted(by.items()) if v[0] is not None]
    over = f" over {n} processes" if n > 1 else " (one process)"
    return Result(c, verdict, f"paired speedups by batch {text}{over}" if text else "", why, "",
                  {"type": "ratio", "rows": rows})


def _threshold_measured(c, sweep) -> Result:
    """The threshold claim from its own measurement (compile_batches): per batch the median
    of the processes' paired speedups and its interval over them; the sweep's figure at
    the small batch shown beside."""
    recs = [r for r in _per_process(c, sweep) if r.get("batches")]
    cfg = c["config"]
    by, ms = {}, {}
    for b in cfg.get("batches", [int(cfg["batch"])]):
        rs = [r["ratio"][r["batches"].index(b)] for r in recs if b in r["batches"]]
        if not rs:
            continue
        s = statistics.median(rs)
        lo, hi = median_ci(rs) if len(rs) > 1 else (None, None)
        by[b] = (s, lo, hi, len(rs))
        ms[b] = tuple(statistics.median(r[k][r["batches"].index(b)] for r in recs if b in r["batches"])
                      for k in ("eager_ms", "variant_ms"))
    if not by:
        bad = [f"batch {x['batch']}: {x.get('reason') or 'output differs from eager'}"
               for r in _per_process(c, sweep) for x in r.get("check", []) if not x.get("passed")]
        res = Result(c, V.NOT_TESTED, "", "the batches not measured: " + ("; ".join(bad) if bad else
                                                                             "no reproduction/claims.json record"))
    else:
        res = _threshold_parts(c, by)
        ref, var = cfg["variants"][:2]
        res.absolute = "; ".join(f"{b}: {ref} {e:.3g} / {var} {v:.3g} ms = {e / v:.3g}x (medians, shown)"
                                 for b, (e, v) in sorted(ms.items()))
    d, where = sweep.pick(cfg["model"], cfg["variants"], cfg["batch"], cfg.get("size", "default"), cfg["mode"])
    if len(d) and not where:
        s1 = _speedup(sweep, d, cfg["variants"][1])
        if s1[0] is not None:
            res.notes.append(f"the sweep's run at batch {cfg['batch']}: {s1[0]:.3g}x"
                             + (f" [{s1[1]:.3g}, {s1[2]:.3g}]" if s1[1] is not None else "") + " (shown beside, not judged)")
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


def formula_elements(c: dict, sweep: Sweep) -> tuple:
    """(the table's total in elements, its rows' sum, itemsize, B, H) at the claim's config."""
    cfg = c["config"]
    B, F, H = int(cfg["batch"]), cfg.get("feature", 1), cfg.get("hidden", 64)
    itemsize = {"float32": 4, "bfloat16": 2, "float16": 2}.get((c.get("measure") or {}).get("dtype", "float32"), 4)
    reads = B * F + F * H + 3 * B * H + 2 * H + 2 * B
    return reads + 2 * B * H + 2 * B, reads + 3 * B * H + 2 * B, itemsize, B, H


def _traffic(c, sweep) -> Result:
    """Table 8.1's count in bytes against Nsight Compute's, cold (DRAM, caches flushed) and
    steady state (L2, caches kept); the cost model's count shown as a proxy."""
    cfg = c["config"]
    total, rows, itemsize, B, H = formula_elements(c, sweep)
    pub = total * itemsize
    rec = (sweep.claims.get(c["id"]) or [{}])[0]
    cold, steady = rec.get("cold") or {}, rec.get("steady") or {}
    d, where = sweep.pick(cfg["model"], cfg["variants"], cfg["batch"], "default", cfg["mode"])
    r = sweep.row(d, cfg["variants"][0]) if len(d) and not where else None
    l2 = steady.get("l2_bytes") if steady.get("status") == "ok" else (
        V._num(r.get("l2_bytes_measured")) if r is not None else None)
    dram_steady = steady.get("dram_bytes") if steady.get("status") == "ok" else (
        V._num(r.get("dram_bytes_measured")) if r is not None else None)
    cold_b = cold.get("dram_bytes") if cold.get("status") == "ok" else None
    tol = c["tolerance"]
    parts = [("cold", *V.traffic(cold_b, pub, tol, "DRAM (caches flushed)")),
             ("steady", *V.traffic(l2, pub, tol, "L2 (caches kept)"))]
    verdict, why = V.compound(parts)
    if cold_b is None and l2 is None:
        verdict, why = V.NOT_TESTED, "no Nsight Compute bytes (the claims' ncu step did not run: " + (
            rec.get("reason") or "no reproduction/claims.json record") + ")"
    got = [f"{k} {v:.4g} B" for k, v in (("DRAM cold", cold_b), ("L2 steady", l2), ("DRAM steady", dram_steady))
           if v is not None]
    res = Result(c, verdict, ", ".join(got) + f" (formula {pub:.4g} B: {total:g} elements x {itemsize} B, B={B}, H={H})"
                 if got else "", why, "",
                 {"type": "ratio", "rows": [(f"{c['id']} {k} / formula", 1.0, (1 / tol, tol), v / pub, None, None, pv)
                                            for (k, pv, _), v in zip(parts, (cold_b, l2)) if v]})
    cost = sweep.cost(cfg["model"], B, "default", cfg["mode"]) if len(sweep.costs) else None
    if cost is not None:
        el = float(cost["bytes_unfused"]) / itemsize
        res.notes.append(f"proxy, not judged: {c['proxy']['why']}: {el:.4g} elements, {el / total:.3g}x the formula")
    res.notes.append(f"the table's rows add up to {rows:g} elements (writes 3BH + 2B; its total line says 2BH + 2B)")
    return res


def _per_process(c, sweep) -> list:
    return [r for r in sweep.claims.get(c["id"]) or [] if isinstance(r, dict)]


def _lstm(c, sweep) -> Result:
    """cuDNN over a sequence against the gate-by-gate cell, repeats across processes; the
    sweep's one-step figure beside it."""
    recs = [r for r in _per_process(c, sweep) if V._num(r.get("ratio"))]
    cfg, m = c["config"], c["measure"]
    one = ""
    d, where = sweep.pick(cfg["model"], cfg["variants"], cfg["batch"], "default", cfg["mode"])
    if len(d) and not where:
        s1 = _speedup(sweep, d, cfg["variants"][1])[0]
        one = f"one step (the sweep's): {s1:.3g}x" if s1 else ""
    if not recs:
        res = Result(c, V.NOT_TESTED, "", f"the sequence (seq {m['seq']}) not measured: no reproduction/claims.json record")
        if one:
            res.notes.append(one + " (shown, not judged: one step is not the claim's sequence)")
        return res
    ratios = [r["ratio"] for r in recs]
    s = statistics.median(ratios)
    lo, hi = median_ci(ratios) if len(ratios) > 1 else (None, None)
    verdict, why = V.ratio(s, c["published"]["value"], c["tolerance"], lo, hi)
    cell, cu = statistics.median(r["cell_ms"] for r in recs), statistics.median(r["cudnn_ms"] for r in recs)
    res = Result(c, verdict, f"{s:.3g}x" + (f" [{lo:.3g}, {hi:.3g}]" if lo is not None else "")
                 + f" over {len(recs)} processes, seq {m['seq']} x batch {m.get('batch')}",
                 why, f"cell {cell:.3g} / cuDNN {cu:.3g} ms a sequence (medians; their ratio {cell / cu:.3g}x)",
                 {"type": "ratio", "rows": [(c["id"], c["published"]["value"], (c["published"]["value"] / c["tolerance"],
                                             c["published"]["value"] * c["tolerance"]), s, lo, hi, verdict)]})
    if one:
        res.notes.append(one + " (shown beside, not judged)")
    return res


def _scaling(c, sweep) -> Result:
    """Time against the claim's axis, from the per-claim processes: the medians fitted, the
    exponent of each process giving the interval."""
    recs = [r for r in _per_process(c, sweep) if r.get("ms")]
    m, tol = c["measure"], c["tolerance"]
    axis = m["axis"].replace("num_", "")
    if not recs:
        res = Result(c, V.NOT_TESTED, "", f"{m['axis']} not varied as the text did: no reproduction/claims.json record")
        proxy = _sweep_scaling(c, sweep)
        if proxy:
            res.notes.append(proxy)
        return res
    x = [float(v) for v in recs[0]["values"]]
    y = [statistics.median(r["ms"][i] for r in recs) for i in range(len(x))]
    ks = [V.marginal_exponent(x, r["ms"]) for r in recs] if len(recs) > 1 else None
    verdict, why = V.scaling(x, y, tol["r2"], tol["exponent"], ks, axis)
    k = V.marginal_exponent(x, y)
    a, b, _ = V.linear_fit(x, y)
    return Result(c, verdict, f"exponent {k:.2f} of the increment over {len(recs)} processes",
                  why, ", ".join(f"{int(v)}: {t:.3g}" for v, t in zip(x, y)) + " ms",
                  {"type": "scaling", "axis": axis, "x": x, "y": y, "fit": (a, b)})


def _sweep_scaling(c, sweep) -> str:
    """The sweep's own times along the axis (another batch or mode than the text's): a proxy."""
    cfg, sp = c["config"], sweep.speedups
    axis = c["measure"]["axis"]
    if not len(sp) or axis not in sp:
        return ""
    d = sp[(sp["model"] == cfg["model"]) & (sp["variant"] == "eager") & (sp["status"] == "ok")].dropna(subset=[axis])
    if not len(d):
        return ""
    b = d["batch"].mode().iloc[0]
    d = d[d["batch"] == b].sort_values(axis)
    x, y = list(d[axis].astype(float)), list(d["wall_time_per_iter_ms"].astype(float))
    if len(x) < 3:
        return ""
    a, k, r2 = V.linear_fit(x, y)
    return (f"proxy, not judged: the sweep's {d['mode'].iloc[0]} at batch {int(b)}: "
            + ", ".join(f"{int(u)}: {t:.3g}" for u, t in zip(x, y)) + f" ms, R^2 {r2:.3f}, "
            f"exponent {V.marginal_exponent(x, y):.2f}")


KINDS = {"ratio": _ratio, "count": _count, "ordering": _ordering, "threshold": _threshold, "launch": _launch}
MEASURED = {"ncu_traffic": _traffic, "lstm_sequence": _lstm, "mlp_scaling": _scaling,
            "compile_batches": _threshold_measured}
