"""The gap ledger (tables/gap_ledger.csv): per configuration (tables.GROUP) and variant,
the untraced gap, variant minus eager per iteration (gap_ms = wall_ms - eager_wall_ms of
tables/headline.csv: positive where the variant is slower), split into signed named terms
(TERMS, ms per iteration, positive where the term adds time to the variant) and a
residual, which add up to it exactly.

The headline splits the gap exactly into exposed host time, kernel time, idle time and
the host-speed difference between processes (sweep.headline). The ledger names what is
inside the first two:

- host side (sweep.gap_host), from the untraced process's record (timing.json `dynamo`,
  runner.dynamo_record: the median over the configuration's processes of each timed cost)
  and the traced run's launch counts; each of the variant's host costs is measured on its
  own, and counts only as far as it is exposed: times the exposed share, the variant's
  exposed host time (headline host_ms: the GPU waiting on the host, untraced) over the sum
  of its host costs, at most 1 (host work hidden behind kernels is not part of the wall
  gap; where the host costs exceed the exposed time, which of them the GPU waited on is not
  measured, so each counts its share of it):
  - recompiles: compile seconds inside the timing windows per iteration, plus the cache
    lookups that found no entry (a frame run eager after the recompile limit);
  - graph_breaks: the resumed frames' cache lookups and the wrapper of every compiled
    graph after the first (graph calls per iteration - 1 of them), and in inference the
    eager code between the graphs (the call's host time around them: below);
  - guards: the first frame's cache lookup (Dynamo's guards);
  - wrapper: the first graph's host time outside its launches (graph host time per
    iteration, less the variant's launches at eager's exposed host time per launch, per graph;
    on the CPU backend less the variant's operator time, which runs inside the call; never
    below 0: where the launches at eager's cost exceed the graphs' time, it is 0); in
    inference without a graph break, plus the call's host time around the graph (the
    iteration's host time less the graphs' and the cache lookups': Dynamo's frame entry and
    the compiled frame's code), so that the host costs add up to the call's host time;
  - launches: the launch path: the variant's launches at eager's exposed host time per
    launch (headline host_per_launch_us), less eager's exposed host time (headline host_ms
    of eager: its Python, dispatch and launches the GPU waited on; on the CPU backend,
    with no launch counts, its time outside operators);
  - loop (training): the iteration's host time outside the compiled forward's calls and
    the cache lookups: the backward's compiled call from autograd, the loss, the optimizer
    step (so that the host costs add up to the iteration's host time);
  - cudagraph_skipped, in place of launches and wrapper where the variant asked for CUDA
    graphs (reduce-overhead) and Inductor skipped them: both together, the host launch
    path a graph replay would have replaced (Inductor's skip message in the detail).
  So the host terms add up to the variant's exposed host time less eager's, less the
  variant's exposed host time no host cost covers (in the residual, never below 0).
- GPU side, from the kernels table (per kernel name, the median over repeats of its time
  per iteration; `kind` and the demangled name say generated, library or eager: role()):
  - fused: the generated kernels against the eager kernels no longer run (the
    operators they replaced; aten operators on the CPU too);
  - library: library kernels the variant no longer runs and those it runs that eager did not;
  - kept: kernels both run, the variant's time less eager's;
  - added: eager kernels only the variant runs (layout copies, casts, glue between graphs,
    a CUDA graph's input copies);
  - idle: the GPU's other idle time (kernel wait and the rest: headline -remainder_ms).
- host_speed: eager beside the variant less eager in its own processes (paired only).
- residual = gap - every named term, its detail split in two: the variant's exposed host
  time no host term covers, and the headline's kernel time (overlapping kernels once)
  against the kernels table's.

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
from fusionlab.analysis.sweep.gap_host import KEYS, dynamo_records, host_terms, us_text as _us
from fusionlab.analysis.sweep.gap_host import number as _num, or_zero as _z

RESIDUAL_SHARE = 0.05
# kernels.csv's kind (analysis.run.fusion.classify): library calls; names it does not
# recognise ("other": cuBLAS's nvjet GEMMs among them) are library calls unless their
# demangled name is PyTorch's own (ATEN_NAME: an eager kernel); on the CPU backend aten
# operators (a library call where it is a matrix product or a convolution); any other kind
# is a kernel Inductor generated
LIBRARY_KINDS = ("library", "other")
ATEN_NAME = ("at::native::", "at::cuda::")
LIBRARY_ATEN = ("linear", "matmul", "mm", "addmm", "bmm", "baddbmm", "conv1d", "conv2d", "conv3d", "convolution",
                "_convolution", "scaled_dot_product_attention", "_scaled_dot_product_flash_attention",
                "_scaled_dot_product_efficient_attention", "lstm")


def role(name: str, kind: str, full_name: str = "") -> str:
    """generated, library or eager: what a kernel of the kernels table is to the ledger."""
    if kind == "aten":
        return "library" if str(name).removeprefix("aten::") in LIBRARY_ATEN else "eager"
    if kind == "other" and any(a in str(full_name) for a in ATEN_NAME):
        return "eager"
    if kind in LIBRARY_KINDS:
        return "library"
    return "eager" if kind == "eager" else "generated"


@dataclass(frozen=True)
class Term:
    name: str
    side: str        # host | gpu | pairing | residual
    label: str
    source: str


# the bound of every host term: what of the variant's host costs the GPU waited on
EXPOSED = " x exposed share (headline host_ms of the variant / its host costs, at most 1)"
TERMS = (
    Term("recompiles", "host", "recompiles", "timing.json dynamo.windows_compile_us_per_iter + "
         "dynamo.guards.missed_lookup_us_per_iter" + EXPOSED),
    Term("graph_breaks", "host", "graph breaks", "timing.json dynamo.guards (resumed frames' lookup_us, "
         "graph_calls_per_iter - 1 wrappers; inference: plus iteration_host_us_per_iter less "
         "graph_host_us_per_iter and the lookups)" + EXPOSED),
    Term("guards", "host", "Dynamo guards", "timing.json dynamo.guards.frames[0].lookup_us" + EXPOSED),
    Term("wrapper", "host", "compiled wrapper", "timing.json dynamo.guards.graph_host_us_per_iter less "
         "launches x headline host_per_launch_us (eager); inference: plus iteration_host_us_per_iter less "
         "graph_host_us_per_iter and the lookups" + EXPOSED),
    Term("loop", "host", "training loop outside the compiled forward", "timing.json "
         "dynamo.guards.iteration_host_us_per_iter less graph_host_us_per_iter, lookup_us_per_iter and "
         "missed_lookup_us_per_iter (training only)" + EXPOSED),
    Term("cudagraph_skipped", "host", "CUDA graphs skipped", "launches and wrapper (their sources) where "
         "timing.json dynamo.total.cudagraph_skips > 0 under reduce-overhead"),
    Term("launches", "host", "launch path", "headline launches_per_iter x host_per_launch_us (eager)" + EXPOSED
         + ", less headline host_ms of eager"),
    Term("fused", "gpu", "generated kernels vs the eager kernels they replaced", "kernels.csv kind, full_name"),
    Term("library", "gpu", "library kernels displaced and their replacements",
         "kernels.csv kind library/other, full_name not PyTorch's"),
    Term("kept", "gpu", "kernels both run", "kernels.csv name"),
    Term("added", "gpu", "kernels added", "kernels.csv kind eager (or other, PyTorch's), variant only"),
    Term("idle", "gpu", "GPU idle gaps", "headline -remainder_ms"),
    Term("host_speed", "pairing", "host speed between processes", "headline -host_speed_ms "
         "(eager_own_ms - eager_wall_ms)"),
    Term("residual", "residual", "residual", "gap - named terms"),
)
BY_NAME = {t.name: t for t in TERMS}
COLUMNS = KEYS + ["term", "side", "label", "ms", "detail", "source", "rank", "gap_ms", "gap_lo_ms", "gap_hi_ms",
                  "speedup", "residual_explained", "sentence"]


def by_name(kernels: pd.DataFrame) -> pd.DataFrame:
    """One run configuration's kernels by name: the median over repeats of the name's time
    per iteration, its kind (the one of most time where a name has two) and role()."""
    cols = {"name": object, "kind": object, "time_per_iter_us": float, "role": object}
    if kernels.empty:
        return pd.DataFrame({c: pd.Series(dtype=t) for c, t in cols.items()})
    # kind and full_name as objects: a column with every cell empty is read from a CSV as
    # numbers, into which pandas will not fill text
    k = kernels.assign(kind=kernels["kind"].astype(object).fillna("other") if "kind" in kernels else "other",
                       repeat=kernels["repeat"] if "repeat" in kernels else 0,
                       full_name=kernels["full_name"].astype(object).fillna("") if "full_name" in kernels else "")
    t = k.groupby(["repeat", "name"])["time_per_iter_us"].sum().groupby("name").median()
    kinds = (k.groupby(["name", "kind"])["time_per_iter_us"].sum().reset_index()
             .sort_values("time_per_iter_us", kind="stable").drop_duplicates("name", keep="last").set_index("name"))
    full = k.groupby("name")["full_name"].first()
    out = pd.DataFrame({"name": t.index, "kind": kinds["kind"].reindex(t.index).to_numpy(),
                        "time_per_iter_us": t.to_numpy()})
    out["role"] = [role(n, kd, full.get(n, "")) for n, kd in zip(out["name"], out["kind"])]
    return out


def _top(df: pd.DataFrame, n: int = 3) -> str:
    return "; ".join(f"{r['name'][:60]} {_us(r['time_per_iter_us'])}" for _, r in
                     df.nlargest(n, "time_per_iter_us").iterrows())


def gpu_terms(eager: pd.DataFrame, variant: pd.DataFrame) -> dict:
    """fused, library, kept, added (module doc) in ms per iteration, each with a detail:
    the variant's kernels' time less eager's, split by name sets, so they add up to it."""
    e, v = by_name(eager), by_name(variant)
    e_only, v_only = e[~e["name"].isin(v["name"])], v[~v["name"].isin(e["name"])]
    gen = v_only[v_only["role"] == "generated"]
    e_gone_eager = e_only[e_only["role"] != "library"]
    lib_gone, lib_new = e_only[e_only["role"] == "library"], v_only[v_only["role"] == "library"]
    added = v_only[v_only["role"] == "eager"]
    both = v.merge(e, on="name", suffixes=("_v", "_e"))
    us = lambda df: float(df["time_per_iter_us"].sum())    # noqa: E731
    return {
        "fused": ((us(gen) - us(e_gone_eager)) / 1e3,
                  f"{len(gen)} generated kernels {_us(us(gen))} against {len(e_gone_eager)} eager kernels "
                  f"{_us(us(e_gone_eager))}"),
        "library": ((us(lib_new) - us(lib_gone)) / 1e3,
                    f"gone: {_top(lib_gone) or 'none'}; new: {_top(lib_new) or 'none'}"),
        "kept": (float((both["time_per_iter_us_v"] - both["time_per_iter_us_e"]).sum()) / 1e3,
                 f"{len(both)} kernels by name"),
        "added": (us(added) / 1e3, _top(added) or "none"),
    }


def _key(r: dict, cols) -> tuple:
    return tuple(str(r.get(c)) for c in cols)


def _residual_detail(v: dict, e: dict, terms: dict, res: float) -> str:
    """The residual's two parts (module doc): the exposed host time no host term covers
    and the kernel time the kernels table does not hold; what the records leave is `not split`."""
    side = lambda s: sum(_z(ms) for n, (ms, _) in terms.items() if BY_NAME[n].side == s)   # noqa: E731
    host = _num(v.get("host_ms")) - _num(e.get("host_ms")) - side("host")
    gpu = _num(v.get("kernel_ms")) - _num(e.get("kernel_ms")) - (side("gpu") - _z(terms["idle"][0]))
    parts = [f"the variant's exposed host time no host term covers {_fmt_us(host)}" if host == host else "",
             f"the headline's kernel time less the kernels table's {_fmt_us(gpu)}" if gpu == gpu else ""]
    other = res - _z(host) - _z(gpu)
    if abs(other) > 5e-7:
        parts.append(f"not split {_fmt_us(other)}")
    return "; ".join(p for p in parts if p)


def rows_of(v: dict, e: dict, dyn: dict | None, kv: pd.DataFrame, ke: pd.DataFrame) -> list[dict]:
    """One configuration's ledger rows (module doc): its terms, the residual and the total."""
    gap = _num(v.get("wall_ms")) - _num(v.get("eager_wall_ms"))
    s, lo, hi = _num(v.get("speedup")), _num(v.get("speedup_lo")), _num(v.get("speedup_hi"))
    w = _num(v.get("wall_ms"))
    gap_lo, gap_hi = w * (1 - hi), w * (1 - lo)
    ro = "reduce_overhead" in str(v.get("variant")) or "reduce-overhead" in str(v.get("compile_mode", ""))
    terms = host_terms(v, e, dyn, ro)
    terms.update(gpu_terms(ke, kv))
    terms["idle"] = (-_z(v.get("remainder_ms")),
                     f"kernel wait {_z(v.get('kernel_wait_ms')):.3g} + other idle {_z(v.get('other_ms')):.3g} ms "
                     f"against eager's {_z(e.get('kernel_wait_ms')):.3g} + {_z(e.get('other_ms')):.3g} ms")
    paired = _num(v.get("host_speed_ms")) == _num(v.get("host_speed_ms"))
    terms["host_speed"] = (-_z(v.get("host_speed_ms")),
                           f"eager beside the variant {_num(v.get('eager_wall_ms')):.4g} ms, in its own processes "
                           f"{_num(v.get('eager_own_ms')):.4g} ms" if paired else str(v.get("reference", "")))
    res = gap - sum(_z(ms) for ms, _ in terms.values())
    terms["residual"] = (res, _residual_detail(v, e, terms, res))
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
    if abs(ms) < 5e-7:      # under a thousandth of a microsecond: the rounding of a sum
        return "0 us"
    return f"{ms * 1e3:+.3g} us" if abs(ms) < 1 else f"{ms:+.3g} ms"


def sentence(rows: list[dict], n: int = 3) -> str:
    """One configuration's sentence from its ledger rows: the speedup, the gap and its
    interval, the top `n` ranked terms with their cost and the first's detail, the largest
    term against the gap's sign where it is over RESIDUAL_SHARE of the gap, and the
    residual; every number as the rows hold it (fusionlab audit checks it)."""
    total = next(r for r in rows if r["term"] == "total")
    ranked = sorted((r for r in rows if r.get("rank") == r.get("rank") and r.get("rank")), key=lambda r: r["rank"])
    res = next(r for r in rows if r["term"] == "residual")
    lo, hi = _num(total.get("gap_lo_ms")), _num(total.get("gap_hi_ms"))
    head = f"{total['speedup']:.2f}x, {_fmt_us(total['ms'])} per iteration" + (
        f" (interval {_fmt_us(lo)} to {_fmt_us(hi)})" if lo == lo and hi == hi else "")
    tail = f"residual {_fmt_us(res['ms'])}."
    against = [r for r in rows if r["term"] not in ("total", "residual") and _z(r["ms"]) * total["ms"] < 0
               and abs(r["ms"]) > RESIDUAL_SHARE * abs(total["ms"])]
    if against:
        r = max(against, key=lambda r: abs(r["ms"]))
        tail = f"against it: {r['label']} {_fmt_us(r['ms'])}; {tail}"
    if not ranked:
        return f"{head}: no named term of the gap's sign; {tail}"
    first = ranked[0]
    parts = [f"{first['label']} ({first['detail']}), {_fmt_us(first['ms'])}"]
    parts += [f"{r['label']} {_fmt_us(r['ms'])}" for r in ranked[1:n]]
    return f"{head}: " + "; ".join(parts) + f"; {tail}"


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
