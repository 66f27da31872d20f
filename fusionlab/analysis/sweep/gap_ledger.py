"""The gap ledger (tables/gap_ledger.csv): per configuration (tables.GROUP) and variant,
the untraced gap, variant minus eager per iteration (gap_ms = wall_ms - eager_wall_ms of
tables/headline.csv: positive where the variant is slower), split into signed named terms
(TERMS, ms per iteration, positive where the term adds time to the variant) and a
residual, which add up to it exactly.

The headline splits the gap exactly into exposed host time, kernel time, idle time and
the host-speed difference between processes (sweep.headline). The ledger names what is
inside the first two:

- host side, from the untraced process's record (timing.json `dynamo`,
  runner.dynamo_record) and the traced run's launch counts:
  - recompiles: compile seconds inside the timing windows per iteration, plus the cache
    lookups that found no entry (a frame run eager after the recompile limit);
  - graph_breaks: the resumed frames' cache lookups and the wrapper of every compiled
    graph after the first (graph calls per iteration - 1 of them);
  - guards: the first frame's cache lookup (Dynamo's guards);
  - wrapper: the first graph's host time outside its launches (graph host time per
    iteration, less the variant's launches at eager's host time per launch, per graph;
    on the CPU backend less the variant's operator time, which runs inside the call; never
    below 0: where the launches at eager's cost exceed the graphs' time, it is 0);
  - launches: the launch-count difference at eager's host time per launch
    (headline host_per_launch_us: eager's exposed host time per launch);
  - cudagraph_skipped, in place of launches and wrapper where the variant asked for CUDA
    graphs (reduce-overhead) and Inductor skipped them: both together, the host launch
    path a graph replay would have replaced (Inductor's skip message in the detail).
- GPU side, from the kernels table (per kernel name, the median over repeats of its time
  per iteration; `kind` says generated, library or eager):
  - fused: the generated kernels against the eager kernels no longer run (the
    operators they replaced; role() says which kernel is which, aten operators on the CPU too);
  - library: library kernels the variant no longer runs and those it runs that eager did not;
  - kept: kernels both run, the variant's time less eager's;
  - added: eager-kind kernels only the variant runs (layout copies, casts, glue between graphs);
  - idle: the GPU's other idle time (kernel wait and the rest: headline -remainder_ms).
- host_speed: eager beside the variant less eager in its own processes (paired only).
- residual = gap - every named term: the exposed host time the named host terms do not
  account for (host work hidden behind kernels makes it negative) and the kernels table's
  time against the headline's kernel time.

Each row's `source` names the record and field it comes from. One row per term and a
`total` row per configuration with the gap, its interval (from the speedup's:
wall_ms x (1 - speedup)), whether the residual is explained (|residual| within
RESIDUAL_SHARE of |gap| or inside the gap's interval) and the sentence (sentence())."""
from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fusionlab.analysis.sweep import tables

RESIDUAL_SHARE = 0.05
# kernels.csv's kind (analysis.run.fusion.classify): library calls, eager's own kernels and,
# on the CPU backend, aten operators (a library call where it is a matrix product or a
# convolution); any other kind is a kernel Inductor generated
LIBRARY_KINDS = ("library", "other")
NOT_GENERATED = ("eager", "library", "other", "aten")
LIBRARY_ATEN = ("linear", "matmul", "mm", "addmm", "bmm", "baddbmm", "conv1d", "conv2d", "conv3d", "convolution",
                "_convolution", "scaled_dot_product_attention", "_scaled_dot_product_flash_attention",
                "_scaled_dot_product_efficient_attention", "lstm")


def role(name: str, kind: str) -> str:
    """generated, library or eager: what a kernel of the kernels table is to the ledger."""
    if kind == "aten":
        return "library" if str(name).removeprefix("aten::") in LIBRARY_ATEN else "eager"
    if kind in LIBRARY_KINDS:
        return "library"
    return "eager" if kind == "eager" else "generated"


@dataclass(frozen=True)
class Term:
    name: str
    side: str        # host | gpu | pairing | residual
    label: str
    source: str


TERMS = (
    Term("recompiles", "host", "recompiles", "timing.json dynamo.windows_compile_us_per_iter + "
         "dynamo.guards.missed_lookup_us_per_iter"),
    Term("graph_breaks", "host", "graph breaks", "timing.json dynamo.guards (resumed frames' lookup_us, "
         "graph_calls_per_iter - 1 wrappers)"),
    Term("guards", "host", "Dynamo guards", "timing.json dynamo.guards.frames[0].lookup_us"),
    Term("wrapper", "host", "compiled wrapper", "timing.json dynamo.guards.graph_host_us_per_iter less "
         "launches x headline host_per_launch_us (eager)"),
    Term("cudagraph_skipped", "host", "CUDA graphs skipped", "launches and wrapper (above) where "
         "timing.json dynamo.total.cudagraph_skips > 0 under reduce-overhead"),
    Term("launches", "host", "launch count", "headline launches_per_iter x host_per_launch_us (eager)"),
    Term("fused", "gpu", "generated kernels vs the eager kernels they replaced", "kernels.csv kind"),
    Term("library", "gpu", "library kernels displaced and their replacements", "kernels.csv kind library/other"),
    Term("kept", "gpu", "kernels both run", "kernels.csv name"),
    Term("added", "gpu", "kernels added", "kernels.csv kind eager, variant only"),
    Term("idle", "gpu", "GPU idle gaps", "headline -remainder_ms"),
    Term("host_speed", "pairing", "host speed between processes", "headline -host_speed_ms"),
    Term("residual", "residual", "residual", "gap - named terms"),
)
BY_NAME = {t.name: t for t in TERMS}
KEYS = list(tables.GROUP) + ["variant"]
COLUMNS = KEYS + ["term", "side", "label", "ms", "detail", "source", "rank", "gap_ms", "gap_lo_ms", "gap_hi_ms",
                  "speedup", "residual_explained", "sentence"]


def _num(x) -> float:
    try:
        x = float(x)
    except (TypeError, ValueError):
        return math.nan
    return x


def _z(x) -> float:
    x = _num(x)
    return 0.0 if x != x else x


def by_name(kernels: pd.DataFrame) -> pd.DataFrame:
    """One run configuration's kernels by name: kind and the median over repeats of the
    name's time per iteration."""
    if kernels.empty:
        return pd.DataFrame({"name": pd.Series(dtype=object), "kind": pd.Series(dtype=object),
                             "time_per_iter_us": pd.Series(dtype=float)})
    k = kernels.assign(kind=kernels["kind"].fillna("other") if "kind" in kernels else "other")
    rep = k["repeat"] if "repeat" in k else 0
    per = k.assign(repeat=rep).groupby(["repeat", "name", "kind"])["time_per_iter_us"].sum().reset_index()
    return per.groupby(["name", "kind"])["time_per_iter_us"].median().reset_index()


def _top(df: pd.DataFrame, n: int = 3) -> str:
    return "; ".join(f"{r['name'][:60]} {r['time_per_iter_us']:.3g} us" for _, r in
                     df.nlargest(n, "time_per_iter_us").iterrows())


def gpu_terms(eager: pd.DataFrame, variant: pd.DataFrame) -> dict:
    """fused, library, kept, added (module doc) in ms per iteration, each with a detail:
    the variant's kernels' time less eager's, split by name sets, so they add up to it."""
    e, v = (df.assign(role=[role(n, k) for n, k in zip(df["name"], df["kind"])])
            for df in (by_name(eager), by_name(variant)))
    e_only, v_only = e[~e["name"].isin(v["name"])], v[~v["name"].isin(e["name"])]
    gen = v_only[v_only["role"] == "generated"]
    e_gone_eager = e_only[e_only["role"] != "library"]
    lib_gone, lib_new = e_only[e_only["role"] == "library"], v_only[v_only["role"] == "library"]
    added = v_only[v_only["role"] == "eager"]
    both = v.merge(e, on="name", suffixes=("_v", "_e"))
    us = lambda df: float(df["time_per_iter_us"].sum())    # noqa: E731
    return {
        "fused": ((us(gen) - us(e_gone_eager)) / 1e3,
                  f"{len(gen)} generated kernels {us(gen):.4g} us against {len(e_gone_eager)} eager kernels "
                  f"{us(e_gone_eager):.4g} us"),
        "library": ((us(lib_new) - us(lib_gone)) / 1e3,
                    f"gone: {_top(lib_gone) or 'none'}; new: {_top(lib_new) or 'none'}"),
        "kept": (float((both["time_per_iter_us_v"] - both["time_per_iter_us_e"]).sum()) / 1e3,
                 f"{len(both)} kernels by name"),
        "added": (us(added) / 1e3, _top(added) or "none"),
    }


def host_terms(v: dict, e: dict, dyn: dict | None, reduce_overhead: bool) -> dict:
    """The host side's named terms (module doc) in ms per iteration, each with a detail;
    v and e: the variant's and eager's headline rows; dyn: the variant's dynamo record."""
    per_launch = _num(e.get("host_per_launch_us"))
    lv, le = _num(v.get("launches_per_iter")), _num(e.get("launches_per_iter"))
    out = {}
    launches = (lv - le) * per_launch / 1e3 if all(x == x for x in (lv, le, per_launch)) else math.nan
    tot = (dyn or {}).get("total") or {}
    skips = int(tot.get("cudagraph_skips") or 0)
    if reduce_overhead and skips:
        reasons = "; ".join((dyn or {}).get("cudagraph_skip_reasons") or []) or "reason not logged"
        out["cudagraph_skipped"] = (launches, f"{skips} graphs skipped ({reasons[:200]}): "
                                               f"{lv:.0f} launches against eager's {le:.0f}")
    else:
        out["launches"] = (launches, f"{lv:.0f} launches against eager's {le:.0f} at {per_launch:.3g} us each"
                           if launches == launches else "no launch counts (the CPU backend, or no trace)")
    g = (dyn or {}).get("guards") or {}
    frames = g.get("frames") or []
    hit = [f for f in frames if f.get("entry") is not None]
    resumed = [f for f in hit if "torch_dynamo_resume_in" in f.get("code", "")]
    first = [f for f in hit if f not in resumed]
    calls, graph_us = int(g.get("graph_calls_per_iter") or 0), _num(g.get("graph_host_us_per_iter"))
    # inside the graphs' host time: their launches, or on the CPU the operators themselves,
    # at most all of it (eager's cost per launch, Python dispatch included, can exceed a graph's)
    inside = (_z(v.get("kernel_ms")) * 1e3 if v.get("device") == "cpu"
              else (lv if lv == lv else 0.0) * (per_launch if per_launch == per_launch else 0.0))
    wrapper_each = (graph_us - min(inside, graph_us)) / calls if calls and graph_us == graph_us else math.nan
    if dyn:
        out["guards"] = (sum(f["lookup_us"] for f in first) / 1e3,
                         f"{len(first)} frame(s), {sum(f['lookup_us'] for f in first):.3g} us cache lookup")
        out["wrapper"] = (wrapper_each / 1e3 if calls else math.nan,
                          f"{graph_us:.4g} us in {calls} compiled graph call(s) per iteration" if calls
                          else "no compiled graph call timed")
        breaks = tot.get("graph_breaks") or 0
        sites = ", ".join(f"{os.path.basename(s.get('file') or '?')}:{s.get('line')}"
                          for s in tot.get("graph_break_sites") or [])
        reasons = "; ".join(r["reason"][:80] for r in tot.get("graph_break_reasons") or [])
        gb = sum(f["lookup_us"] for f in resumed) / 1e3 + (max(calls - 1, 0) * wrapper_each / 1e3 if calls else 0.0)
        out["graph_breaks"] = (gb if breaks or resumed else 0.0,
                               f"{breaks} graph break(s)" + (f" at {sites}" if sites else "")
                               + (f" ({reasons})" if reasons else "") + f", {calls} graphs per iteration")
        win = dyn.get("windows") or {}
        rc = _z(dyn.get("windows_compile_us_per_iter")) + _z(g.get("missed_lookup_us_per_iter"))
        limit = tot.get("recompile_limit_hits") or 0
        guard = next(iter((tot.get("recompile_guards") or {}).values()), "")
        out["recompiles"] = (rc / 1e3, f"{tot.get('recompiles', 0)} recompiles ({win.get('recompiles', 0)} in the "
                                       f"windows)" + (f", recompile limit hit {limit}x: the frame then runs eager"
                                                     if limit else "")
                             + (f"; failed guard: {guard.split('#')[0].strip()[:100]}" if guard else ""))
    if "cudagraph_skipped" in out and "wrapper" in out:   # the host launch path a replay would have replaced
        ms, detail = out.pop("wrapper")
        out["cudagraph_skipped"] = (out["cudagraph_skipped"][0] + _z(ms), out["cudagraph_skipped"][1] + f"; {detail}")
    return out


def _key(r: dict, cols) -> tuple:
    return tuple(str(r.get(c)) for c in cols)


def rows_of(v: dict, e: dict, dyn: dict | None, kv: pd.DataFrame, ke: pd.DataFrame) -> list[dict]:
    """One configuration's ledger rows (module doc): its terms, the residual and the total."""
    gap = _num(v.get("wall_ms")) - _num(v.get("eager_wall_ms"))
    s, lo, hi = _num(v.get("speedup")), _num(v.get("speedup_lo")), _num(v.get("speedup_hi"))
    w = _num(v.get("wall_ms"))
    gap_lo, gap_hi = w * (1 - hi), w * (1 - lo)
    ro = "reduce_overhead" in str(v.get("variant")) or "reduce-overhead" in str(v.get("compile_mode", ""))
    terms = host_terms(v, e, dyn, ro)
    terms.update(gpu_terms(ke, kv))
    terms["idle"] = (-_z(v.get("remainder_ms")), f"kernel wait and other idle: {_z(v.get('kernel_wait_ms')):.3g} + "
                                                 f"{_z(v.get('other_ms')):.3g} ms against eager's")
    terms["host_speed"] = (-_z(v.get("host_speed_ms")), str(v.get("reference", "")))
    named = sum(_z(ms) for ms, _ in terms.values())
    terms["residual"] = (gap - named, "gap less the named terms")
    res = terms["residual"][0]
    explained = bool(abs(res) <= RESIDUAL_SHARE * abs(gap)
                     or (lo == lo and hi == hi and abs(res) <= (gap_hi - gap_lo) / 2))
    base = {k: v.get(k) for k in KEYS}
    rows = [{**base, "term": n, "side": BY_NAME[n].side, "label": BY_NAME[n].label, "ms": ms, "detail": d,
             "source": BY_NAME[n].source} for n, (ms, d) in terms.items()]
    ranked = sorted((r for r in rows if r["term"] != "residual" and _z(r["ms"]) * (gap if gap == gap else 1) > 0),
                    key=lambda r: -abs(r["ms"]))
    for i, r in enumerate(ranked, 1):
        r["rank"] = i
    rows.sort(key=lambda r: (r.get("rank") or 99, [t.name for t in TERMS].index(r["term"])))
    total = {**base, "term": "total", "side": "total", "label": "gap (variant - eager)", "ms": gap,
             "detail": "", "source": "headline wall_ms - eager_wall_ms", "gap_ms": gap, "gap_lo_ms": gap_lo,
             "gap_hi_ms": gap_hi, "speedup": s, "residual_explained": explained}
    total["sentence"] = sentence(rows + [total])
    return rows + [total]


def _fmt_us(ms: float) -> str:
    return f"{ms * 1e3:+.3g} us" if abs(ms) < 1 else f"{ms:+.3g} ms"


def sentence(rows: list[dict], n: int = 3) -> str:
    """One configuration's sentence from its ledger rows: the speedup and the gap, the top
    `n` ranked terms with their cost and detail, and the residual; every number as the rows
    hold it (fusionlab audit checks it)."""
    total = next(r for r in rows if r["term"] == "total")
    ranked = sorted((r for r in rows if r.get("rank") == r.get("rank") and r.get("rank")), key=lambda r: r["rank"])
    res = next(r for r in rows if r["term"] == "residual")
    head = f"{total['speedup']:.2f}x, {_fmt_us(total['ms'])} per iteration"
    if not ranked:
        return f"{head}: no named term of the gap's sign; residual {_fmt_us(res['ms'])}."
    first = ranked[0]
    parts = [f"{first['label']} ({first['detail']}), {_fmt_us(first['ms'])}"]
    parts += [f"{r['label']} {_fmt_us(r['ms'])}" for r in ranked[1:n]]
    return f"{head}: " + "; ".join(parts) + f"; residual {_fmt_us(res['ms'])}."


def top_cause(ledger: pd.DataFrame, config: dict) -> tuple[str, float, str]:
    """(term, ms, sentence) of one configuration (KEYS) in a gap ledger table: its top-ranked
    term and the sentence naming it (the lead's story calls this)."""
    sel = np.logical_and.reduce([ledger[k].astype(str) == str(config[k]) for k in KEYS if k in config])
    g = ledger[sel]
    top = g[g["rank"] == 1]
    total = g[g["term"] == "total"]
    if total.empty:
        return "", math.nan, ""
    return ((top["term"].iloc[0], float(top["ms"].iloc[0])) if len(top) else ("", math.nan)) + \
        (str(total["sentence"].iloc[0]),)


def build(headline: pd.DataFrame, kernels: pd.DataFrame, dynamo: dict) -> pd.DataFrame:
    """The ledger (module doc) of every ok variant configuration of a headline table with an
    eager row and a gap; dynamo: KEYS tuple (as text) -> the variant's dynamo record."""
    h = tables.with_size(headline)
    k = tables.with_size(kernels) if len(kernels) else kernels
    ok = h[h["status"].eq("ok")]
    eager = {_key(r, tables.GROUP): r for r in ok[ok["variant"] == "eager"].to_dict("records")}
    rows = []
    for v in ok[ok["variant"] != "eager"].to_dict("records"):
        e = eager.get(_key(v, tables.GROUP))
        if e is None or _num(v.get("eager_wall_ms")) != _num(v.get("eager_wall_ms")):
            continue

        def of(variant):
            if k.empty:
                return k
            sel = np.logical_and.reduce([k[c].astype(str) == str(v[c]) for c in tables.GROUP if c in k])
            return k[sel & (k["variant"] == variant)]
        rows += rows_of(v, e, dynamo.get(_key(v, KEYS)), of(v["variant"]), of("eager"))
    return pd.DataFrame(rows, columns=COLUMNS)


def dynamo_records(metric_files) -> dict:
    """KEYS tuple (as text) -> the dynamo record of the configuration's first ok repeat
    that has one: timing.json beside each metrics.json (the untraced process), else run.json."""
    out = {}
    rows = []
    for m in metric_files:
        row = tables.read_json(m) or {}
        rows.append((str(row.get("repeat")), m, row))
    for _, m, row in sorted(rows, key=lambda r: r[0]):
        if row.get("status", "ok") != "ok":
            continue
        key = _key({**row, "size": row.get("size") or "default"}, KEYS)
        if key in out:
            continue
        for name in ("timing.json", "run.json"):
            rec = tables.read_json(os.path.join(os.path.dirname(m), name)) or {}
            if rec.get("dynamo"):
                out[key] = rec["dynamo"]
                break
    return out


def write(metric_files, headline_csv: str, kernels_csv: str, out_csv: str) -> str:
    """Snakemake's entry: tables/gap_ledger.csv from the sweep's files; a one-line account."""
    h = pd.read_csv(headline_csv)
    try:
        k = pd.read_csv(kernels_csv)
    except (pd.errors.EmptyDataError, FileNotFoundError):
        k = pd.DataFrame(columns=KEYS + ["repeat", "name", "kind", "time_per_iter_us"])
    ledger = build(h, k, dynamo_records(metric_files))
    tables.write(ledger, out_csv)
    total = ledger[ledger["term"] == "total"]
    return (f"gap ledger: {len(total)} configurations, {int(total['residual_explained'].astype(bool).sum())} "
            f"with the residual explained")


def expected_causes(import_models: dict, root: str = ".") -> dict:
    """model -> (VARIANT, EXPECTED) of each model named by a file path whose file says
    which variant is slower and which ledger terms may rank first (examples/slow_compile/:
    module-level literals, read without importing the file)."""
    import ast
    out = {}
    for name, entry in import_models.items():
        factory = entry["factory"] if isinstance(entry, dict) else entry
        path = factory.rsplit(":", 1)[0]
        if not path.endswith(".py"):
            continue
        path = path if os.path.isabs(path) else os.path.join(root, path)
        with open(path) as f:
            tree = ast.parse(f.read(), path)
        found = {t.id: ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
                 for t in n.targets if isinstance(t, ast.Name) and t.id in ("VARIANT", "EXPECTED")}
        if "EXPECTED" in found and "VARIANT" in found:
            out[name] = (found["VARIANT"], tuple(found["EXPECTED"]))
    return out


def case_verdicts(ledger: pd.DataFrame, expected: dict) -> pd.DataFrame:
    """Per known-cause case's configurations (expected_causes) in a ledger: its top-ranked
    term, the expected ones, and whether they agree (`no ledger row`: the case did not run
    ok beside eager)."""
    rows = []
    for model, (variant, terms) in sorted(expected.items()):
        total = ledger[(ledger["model"] == model) & (ledger["variant"] == variant) & (ledger["term"] == "total")]
        if total.empty:
            rows.append({"model": model, "variant": variant, "expected": " or ".join(terms), "top": "",
                         "top_ms": math.nan, "ok": False, "sentence": "no ledger row"})
            continue
        for _, t in total.iterrows():
            cfg = {k: t[k] for k in KEYS}
            top, ms, text = top_cause(ledger, cfg)
            rows.append({**cfg, "expected": " or ".join(terms), "top": top, "top_ms": ms,
                         "ok": top in terms, "sentence": text})
    return pd.DataFrame(rows)
