"""The gap ledger's host side (sweep.gap_ledger's module doc says what each term is): the
variant's host costs as measured on their own (host_costs), each counted as far as it is
exposed (host_terms: times the variant's exposed host time over their sum, at most 1;
eager's exposed host time taken off the launch path), and the dynamo record of each
configuration (dynamo_records: its processes' timed costs, the median of each)."""
from __future__ import annotations

import copy
import math
import os
import statistics

from fusionlab.analysis.sweep import tables

KEYS = list(tables.GROUP) + ["variant"]   # a ledger configuration
# the dynamo record's timed host costs (runner.dynamo_record), per iteration
TIMED = ("graph_host_us_per_iter", "lookup_us_per_iter", "missed_lookup_us_per_iter", "iteration_host_us_per_iter")


def number(x) -> float:
    """x as a float; NaN where it is none."""
    try:
        x = float(x)
    except (TypeError, ValueError):
        return math.nan
    return x


def or_zero(x) -> float:
    """x as a float; 0 where it is none."""
    x = number(x)
    return 0.0 if x != x else x


def us_text(us: float) -> str:
    """A time in us as text in the unit that fits it (3 significant digits)."""
    return f"{us / 1e3:.3g} ms" if abs(us) >= 1e3 else f"{us:.3g} us"


def _pct(share: float) -> str:
    return "<1%" if 0 < share < 0.005 else f"{share:.0%}"


def host_costs(v: dict, e: dict, dyn: dict | None, reduce_overhead: bool) -> dict:
    """The variant's host costs (module doc) as measured on their own, in us per
    iteration, each with a detail; `launches`: the variant's launches at eager's exposed
    host time per launch (0 without launch counts)."""
    per_launch = number(e.get("host_per_launch_us"))
    lv, le = number(v.get("launches_per_iter")), number(e.get("launches_per_iter"))
    counted = all(x == x for x in (lv, le, per_launch))
    out = {"launches": (lv * per_launch if counted else 0.0,
                        f"{lv:.0f} launches against eager's {le:.0f} at {per_launch:.3g} us each" if counted
                        else "no launch counts (the CPU backend, or no trace)")}
    g = (dyn or {}).get("guards") or {}
    frames = g.get("frames") or []
    hit = [f for f in frames if f.get("entry") is not None]
    resumed = [f for f in hit if "torch_dynamo_resume_in" in f.get("code", "")]
    first = [f for f in hit if f not in resumed]
    calls, graph_us = int(g.get("graph_calls_per_iter") or 0), number(g.get("graph_host_us_per_iter"))
    # inside the graphs' host time: their launches, or on the CPU the operators themselves,
    # at most all of it (eager's cost per launch, Python dispatch included, can exceed a graph's)
    inside = or_zero(v.get("kernel_ms")) * 1e3 if v.get("device") == "cpu" else out["launches"][0]
    wrapper_each = (graph_us - min(inside, graph_us)) / calls if calls and graph_us == graph_us else math.nan
    tot = (dyn or {}).get("total") or {}
    if dyn:
        n = f" (median of {dyn['repeats']} processes)" if dyn.get("repeats", 1) > 1 else ""
        out["guards"] = (sum(f["lookup_us"] for f in first),
                         f"{len(first)} frame(s), {sum(f['lookup_us'] for f in first):.3g} us cache lookup{n}")
        out["wrapper"] = (wrapper_each if calls else math.nan,
                          f"{graph_us:.4g} us in {calls} compiled graph call(s) per iteration{n}" if calls
                          else "no compiled graph call timed")
        breaks = tot.get("graph_breaks") or 0
        sites = ", ".join(f"{os.path.basename(s.get('file') or '?')}:{s.get('line')}"
                          for s in tot.get("graph_break_sites") or [])
        reasons = "; ".join(r["reason"][:80] for r in tot.get("graph_break_reasons") or [])
        gb = sum(f["lookup_us"] for f in resumed) + (max(calls - 1, 0) * wrapper_each if calls else 0.0)
        out["graph_breaks"] = (gb if breaks or resumed else 0.0,
                               f"{breaks} graph break(s)" + (f" at {sites}" if sites else "")
                               + (f" ({reasons})" if reasons else "") + f", {calls} graphs per iteration")
        whole = number(g.get("iteration_host_us_per_iter"))
        if v.get("mode") != "train" and calls and graph_us == graph_us and whole == whole:
            # inference: the call's host time around its graphs joins the term it belongs to
            around, d = frame_cost(g, graph_us, bool(breaks or resumed))
            name = "graph_breaks" if breaks or resumed else "wrapper"
            out[name] = (out[name][0] + around, f"{out[name][1]}; {d}")
        win = dyn.get("windows") or {}
        limit = tot.get("recompile_limit_hits") or 0
        guard = next(iter((tot.get("recompile_guards") or {}).values()), "")
        compiled = or_zero(dyn.get("windows_compile_us_per_iter")) + or_zero(g.get("missed_lookup_us_per_iter"))
        out["recompiles"] = (compiled,
                             f"{tot.get('recompiles', 0)} recompiles ({win.get('recompiles', 0)} in the windows)"
                             + (f", recompile limit hit {limit}x: the frame then runs eager" if limit else "")
                             + (f"; failed guard: {guard.split('#')[0].strip()[:100]}" if guard else ""))
        if v.get("mode") == "train" and calls and graph_us == graph_us and "iteration_host_us_per_iter" in g:
            out["loop"] = loop_cost(g, graph_us, n)
    skips = int(tot.get("cudagraph_skips") or 0)
    if reduce_overhead and skips:   # the host launch path a graph replay would have replaced
        reasons = "; ".join((dyn or {}).get("cudagraph_skip_reasons") or []) or "reason not logged"
        (lu, ld), (wu, wd) = out.pop("launches"), out.pop("wrapper", (0.0, ""))
        out["cudagraph_skipped"] = (lu + or_zero(wu), f"{skips} graphs skipped ({reasons[:200]}): {ld}"
                                    + (f"; {wd}" if wd else ""))
    return out


def frame_cost(g: dict, graph_us: float, breaks: bool) -> tuple[float, str]:
    """An inference call's host time around its compiled graphs and Dynamo's cache lookups,
    in us: Dynamo's frame entry, the compiled frame's code (inputs, sizes, outputs) and,
    with graph breaks, the eager code run between the graphs (loop_cost's arithmetic)."""
    us, _ = loop_cost(g, graph_us)
    what = ("the eager code between the graphs and the frames' own code" if breaks
            else "Dynamo's frame entry and the compiled frame's code around the graph")
    return us, (f"{us_text(us)} of the call's {us_text(number(g.get('iteration_host_us_per_iter')))} host time "
                f"around the graphs and the cache lookups: {what}")


def loop_cost(g: dict, graph_us: float, n: str = "") -> tuple[float, str]:
    """A training iteration's host time outside the compiled forward's calls and Dynamo's
    cache lookups (the backward's compiled call from autograd, the loss, the optimizer
    step, zero_grad), in us: the iteration's host time less the graphs' and the lookups'
    (runner.dynamo_record), never below 0; NaN where the iteration was not timed."""
    whole = number(g.get("iteration_host_us_per_iter"))
    if whole != whole:
        return math.nan, "the iteration's host time not recorded"
    hit = number(g.get("lookup_us_per_iter"))
    if hit != hit:   # a record without the sum: its frames' that found an entry
        hit = sum(or_zero(f.get("lookup_us")) for f in g.get("frames") or [] if f.get("entry") is not None)
    lookups = hit + or_zero(g.get("missed_lookup_us_per_iter"))
    us = max(0.0, whole - graph_us - lookups)
    return us, (f"{us_text(us)} of the iteration's {us_text(whole)} host time outside the compiled forward "
                f"({us_text(graph_us)}) and the cache lookups ({us_text(lookups)}): backward, loss, optimizer step{n}")


def host_terms(v: dict, e: dict, dyn: dict | None, reduce_overhead: bool) -> dict:
    """The host side's named terms (module doc) in ms per iteration, each with a detail;
    v and e: the variant's and eager's headline rows; dyn: the variant's dynamo record:
    each host cost (host_costs) times the exposed share, eager's exposed host time taken
    off the launch path."""
    costs = host_costs(v, e, dyn, reduce_overhead)
    measured = sum(or_zero(us) for us, _ in costs.values())
    exposed = number(v.get("host_ms")) * 1e3
    share = min(1.0, exposed / measured) if exposed == exposed and measured > 0 else 1.0
    mark = f"{_pct(share)} exposed" if exposed == exposed else "exposure not measured (no exposed host time)"
    bound = (f"the variant's host costs {us_text(measured)}, its exposed host time {us_text(exposed)}: {mark}"
             if exposed == exposed else mark)
    out = {n: (us * share / 1e3, f"{d}; {bound if n in ('launches', 'cudagraph_skipped') else mark}")
           for n, (us, d) in costs.items()}
    path = "cudagraph_skipped" if "cudagraph_skipped" in out else "launches"
    eager_host = number(e.get("host_ms"))
    if eager_host != eager_host:   # eager's exposed host time from its launches
        eager_host = number(e.get("launches_per_iter")) * number(e.get("host_per_launch_us")) / 1e3
    ms, d = out[path]
    out[path] = (ms - eager_host, f"{d}; less eager's exposed host time {us_text(eager_host * 1e3)}")
    return out


def _median(xs) -> float:
    xs = [x for x in map(number, xs) if x == x]
    return statistics.median(xs) if xs else math.nan


def merged(recs: list[dict]) -> dict:
    """One configuration's dynamo record from its processes' (in repeat order): the first's
    counts, reasons and frames, each timed cost (TIMED, windows_compile_us_per_iter, each
    frame's lookup_us where every process entered the same frames) the median over the
    processes; `repeats`: how many."""
    if len(recs) < 2:
        return recs[0]
    out = copy.deepcopy(recs[0])
    out["repeats"] = len(recs)
    out["windows_compile_us_per_iter"] = _median(r.get("windows_compile_us_per_iter") for r in recs)
    guards = [r.get("guards") or {} for r in recs]
    g = out["guards"] = out.get("guards") or {}
    for f in TIMED:
        if f in g:
            g[f] = _median(x.get(f) for x in guards)
    codes = [[f.get("code") for f in x.get("frames") or []] for x in guards]
    if all(c == codes[0] for c in codes):
        for i, f in enumerate(g.get("frames") or []):
            f["lookup_us"] = _median(x["frames"][i].get("lookup_us") for x in guards)
    return out


def dynamo_records(metric_files) -> dict:
    """KEYS tuple (as text) -> the configuration's dynamo record (merged) from its ok
    repeats that have one: timing.json beside each metrics.json (the untraced process),
    else run.json."""
    found: dict = {}
    rows = []
    for m in metric_files:
        row = tables.read_json(m) or {}
        rows.append((number(row.get("repeat")), str(row.get("repeat")), m, row))
    for *_, m, row in sorted(rows, key=lambda r: (r[0] if r[0] == r[0] else math.inf, r[1])):
        if row.get("status", "ok") != "ok":
            continue
        key = tuple(str(x) for x in (({**row, "size": row.get("size") or "default"}).get(c) for c in KEYS))
        for name in ("timing.json", "run.json"):
            rec = tables.read_json(os.path.join(os.path.dirname(m), name)) or {}
            if rec.get("dynamo"):
                found.setdefault(key, []).append(rec["dynamo"])
                break
    return {k: merged(v) for k, v in found.items()}
