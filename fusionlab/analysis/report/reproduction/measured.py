"""The claims measured in their own processes (fusionlab.bench.claims, reproduction/
claims.json) against their claims: per point the processes' geometric mean and its
t-interval over them, the between-process spread (Result.spread, for the noise gate),
and the verdict by the rubric (verdict.py).
"""
from __future__ import annotations

from fusionlab.analysis.report.reproduction import interval as I
from fusionlab.analysis.report.reproduction import verdict as V
from fusionlab.analysis.report.reproduction.reading import NOISE, Result, per_process, speedup, threshold_parts
from fusionlab.analysis.report.reproduction.measure import Sweep


def _ci_text(ci) -> str:
    return f" {ci.text()}" if ci is not None else f" ({V.ONE})"


def _spread(recs: list, keys: tuple, n: int) -> float | None:
    """The largest between-process spread (sd / mean) of the records' times, per point."""
    out = [I.spread([r[k][i] for r in recs if len(r.get(k) or []) > i]) for k in keys for i in range(n)]
    return max([x for x in out if x is not None], default=None)


def _none(c, sweep, what: str) -> Result:
    return Result(c, V.NOT_TESTED, "", f"{what} not measured: no reproduction/claims.json record")


def threshold_measured(c, sweep: Sweep) -> Result:
    """The threshold claim from compile_batches: per batch the processes' paired speedups
    (geometric mean, t-interval); the sweep's figure at the claim's batch shown beside."""
    recs = [r for r in per_process(c, sweep) if r.get("batches")]
    cfg = c["config"]
    by, ms = {}, {}
    for b in cfg.get("batches", [int(cfg["batch"])]):
        rs = [r["ratio"][r["batches"].index(b)] for r in recs if b in r["batches"]]
        if rs:
            by[b] = (I.geomean(rs), I.t_interval(rs), len(rs))
            ms[b] = tuple(I.geomean([r[k][r["batches"].index(b)] for r in recs if b in r["batches"]])
                          for k in ("eager_ms", "variant_ms"))
    if not by:
        bad = [f"batch {x['batch']}: {x.get('reason') or 'output differs from eager'}"
               for r in per_process(c, sweep) for x in r.get("check", []) if not x.get("passed")]
        return Result(c, V.NOT_TESTED, "", "the batches not measured: " + ("; ".join(bad) if bad else
                                                                          "no reproduction/claims.json record"))
    res = threshold_parts(c, by)
    ref, var = cfg["variants"][:2]
    res.absolute = "; ".join(f"{b}: {ref} {e:.3g} / {var} {v:.3g} ms = {e / v:.3g}x (geometric means, shown)"
                             for b, (e, v) in sorted(ms.items()))
    res.spread = _spread([{"e": [r["eager_ms"][r["batches"].index(b)] for b in by if b in r["batches"]],
                           "v": [r["variant_ms"][r["batches"].index(b)] for b in by if b in r["batches"]]}
                          for r in recs], ("e", "v"), len(by))
    d, where = sweep.pick(cfg["model"], cfg["variants"], cfg["batch"], cfg.get("size", "default"), cfg["mode"])
    if len(d) and not where:
        sp = speedup(sweep, d, ref, var, c.get("noise", NOISE)["host_bound_share"])
        if sp:
            res.notes.append(f"the sweep's run at batch {cfg['batch']}: {sp['value']:.3g}x{_ci_text(sp['ci'])} "
                             "(shown beside, not judged)")
    return res


def formula_elements(c: dict) -> tuple:
    """(Table 8.1's total in elements, its rows' sum, itemsize, B, H) at the claim's config."""
    cfg = c["config"]
    B, F, H = int(cfg["batch"]), cfg.get("feature", 1), cfg.get("hidden", 64)
    itemsize = {"float32": 4, "bfloat16": 2, "float16": 2}.get((c.get("measure") or {}).get("dtype", "float32"), 4)
    reads = B * F + F * H + 3 * B * H + 2 * H + 2 * B
    return reads + 2 * B * H + 2 * B, reads + 3 * B * H + 2 * B, itemsize, B, H


def traffic(c, sweep: Sweep) -> Result:
    """Table 8.1 counts what each operator reads from and writes to memory: judged on
    Nsight Compute's DRAM bytes with the caches flushed before each kernel; the steady
    state's L2 bytes and the cost model's count shown beside."""
    total, rows, itemsize, B, H = formula_elements(c)
    pub = total * itemsize
    rec = (sweep.claims.get(c["id"]) or [{}])[0]
    cold, steady = rec.get("cold") or {}, rec.get("steady") or {}
    cold_b = cold.get("dram_bytes") if cold.get("status") == "ok" else None
    tol = c["tolerance"]
    if cold_b is None:
        res = Result(c, V.NOT_TESTED, "", "no Nsight Compute bytes (the claims' ncu step did not run: " + (
            rec.get("reason") or cold.get("reason") or "no reproduction/claims.json record") + ")")
    else:
        verdict, why = V.traffic(cold_b, pub, tol, "DRAM (caches flushed)")
        res = Result(c, verdict, f"DRAM cold {cold_b:.4g} B (formula {pub:.4g} B: {total:g} elements x {itemsize} B, "
                     f"B={B}, H={H})", why, "",
                     {"type": "ratio", "rows": [(f"{c['id']} cold / formula", 1.0, (1 / tol, tol), cold_b / pub,
                                                 None, None, verdict)]})
    if steady.get("status") == "ok":
        res.notes.append(f"steady state, shown, not judged (the table has no cache): L2 {steady['l2_bytes']:.4g} B, "
                         f"DRAM {steady['dram_bytes']:.4g} B")
    cost = sweep.cost(c["config"]["model"], B, "default", c["config"]["mode"]) if len(sweep.costs) else None
    if cost is not None:
        el = float(cost["bytes_unfused"]) / itemsize
        res.notes.append(f"proxy, not judged: {c['proxy']['why']}: {el:.4g} elements, {el / total:.3g}x the formula")
    res.notes.append(f"the table's rows add up to {rows:g} elements (writes 3BH + 2B; its total line says 2BH + 2B)")
    return res


def over_points(c, sweep: Sweep, axis: str, key: str, num: str, den: str, label) -> Result:
    """A ratio claim swept over points the text does not give (lstm_sequence's batches,
    pointwise_chain's sizes): per point the processes' ratios (geometric mean, t-interval)
    against the claim's band; the verdict says over which points it holds."""
    recs = [r for r in per_process(c, sweep) if r.get(key)]
    if not recs:
        return _none(c, sweep, f"the {axis}")
    pts = recs[0][key]
    pub, parts, rows, got, times = c["published"].get("value"), [], [], [], []
    band = (float(c["band"][0]), float(c["band"][1])) if c.get("band") else (pub / c["tolerance"], pub * c["tolerance"])
    for i, p in enumerate(pts):
        ok = [r for r in recs if (r.get("matches") or [True] * len(pts))[i]]
        rs = [r["ratio"][i] for r in ok]
        if not rs:
            parts.append((label(p), V.NOT_TESTED, "the variant's output differs from eager's"))
            continue
        s, ci = I.geomean(rs), I.t_interval(rs)
        v, why = V.ratio(s, pub, c["tolerance"], ci, c.get("band"))
        parts.append((label(p), v, why))
        got.append(f"{label(p)}: {s:.3g}x{_ci_text(ci)}")
        times.append(f"{label(p)}: {I.geomean([r[num][i] for r in ok]):.3g} / {I.geomean([r[den][i] for r in ok]):.3g} ms")
        rows.append((f"{c['id']} {label(p)}", pub, band, s, ci.lo if ci else None, ci.hi if ci else None, v))
    verdict, why = V.over_range(parts, axis)
    res = Result(c, verdict, "; ".join(got), why, f"{num} / {den} (geometric means): " + "; ".join(times),
                 {"type": "ratio", "rows": rows})
    res.spread = _spread(recs, (num, den), len(pts))
    return res


def lstm(c, sweep: Sweep) -> Result:
    res = over_points(c, sweep, "batches", "batches", "cell_ms", "cudnn_ms", lambda b: f"batch {b}")
    cfg = c["config"]
    d, where = sweep.pick(cfg["model"], cfg["variants"], cfg["batch"], "default", cfg["mode"])
    if len(d) and not where:
        sp = speedup(sweep, d, *cfg["variants"][:2], c.get("noise", NOISE)["host_bound_share"])
        if sp:
            res.notes.append(f"one step (the sweep's): {sp['value']:.3g}x (shown, not judged: one step is not the "
                             "claim's sequence)")
    return res


def chain(c, sweep: Sweep) -> Result:
    return over_points(c, sweep, "sizes", "elements", "eager_ms", "variant_ms", lambda n: f"2^{n.bit_length() - 1}")


def scaling(c, sweep: Sweep) -> Result:
    """Time against the claim's axis from its own processes: the log-log slope over every
    value (of the processes' geometric means) judged with the t-interval of the
    processes' own slopes."""
    recs = [r for r in per_process(c, sweep) if r.get("ms")]
    m = c["measure"]
    axis = m["axis"].replace("num_", "")
    if not recs:
        return _none(c, sweep, f"{m['axis']} as the text varied it")
    x = [float(v) for v in recs[0]["values"]]
    y = [I.geomean([r["ms"][i] for r in recs]) for i in range(len(x))]
    slopes = [V.loglog_slope(x, r["ms"]) for r in recs]
    ci = I.t_interval([k for k in slopes if k == k], log=False)
    verdict, why = V.scaling(x, y, c.get("exponent", 1.0), c["tolerance"], ci, axis)
    k = V.loglog_slope(x, y)
    orders = [r.get("order") for r in recs if r.get("order")]
    res = Result(c, verdict, f"log-log slope {k:.3f}{_ci_text(ci)}; per process "
                 + ", ".join(f"{s:.3f}" for s in slopes), why,
                 ", ".join(f"{v:g}: {t:.3g}" for v, t in zip(x, y)) + " ms (geometric means over "
                 f"{len(recs)} processes)", {"type": "scaling", "axis": axis, "x": x, "y": y, "slope": k,
                                             "exponent": c.get("exponent", 1.0)})
    res.spread = _spread(recs, ("ms",), len(x))
    if orders:
        res.notes.append(f"values run in a random order per process (seeded, recorded), e.g. {orders[0]}")
    shown = [r for r in recs if r.get("shown")]
    if shown:
        sx = shown[0]["shown"]
        res.notes.append("shown, not fitted: " + ", ".join(
            f"{v:g}: {I.geomean([r['shown_ms'][i] for r in shown]):.3g} ms" for i, v in enumerate(sx)))
    return res


MEASURED = {"ncu_traffic": traffic, "lstm_sequence": lstm, "mlp_scaling": scaling, "matmul_scaling": scaling,
            "pointwise_chain": chain, "compile_batches": threshold_measured}
