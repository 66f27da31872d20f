"""The fusion ledger of one compiled run: per generated kernel, what it computes and what
fusing it saved against eager; and what the compiler left apart, and why.

Inputs: the compiled run's kernels (kernels.csv: name, time_per_iter_us, calls_per_iter;
dram_bytes where Nsight Compute measured it), its graphs (readers.inductor_logs: provenance,
FX graphs, fusion log), and the eager run of the same configuration's kernels.

ledger() - one row per generated kernel (cpp_*/triton_*):
- graph_kind: `inference`, `forward` or `backward` (a training graph's two halves);
  ops_source: `provenance` (its calls are in a graph's kernel -> post-grad mapping) or
  `name` (a generated kernel of the profile no mapping lists: only ops_by_name is known).
- fx_nodes, aten_ops: the post-grad nodes and aten ops it computes (provenance); torch_ops:
  the torch-level calls they came from (postToPre, the pre-grad graph). In a backward graph
  with node meta, each backward node's `original_aten` (the op autograd ran:
  threshold_backward, native_layer_norm_backward, sum), one per seq_nr, and a forward node
  recomputed there as `<op> (recompute)`; grad_of: the forward torch-level ops whose
  gradient it computes (the forward graph's nodes of the same seq_nr, else the node's
  fwd_source_fn_stack). ops_by_name, name_agrees: the ops its name lists
  (analysis.run.fusion) and whether they match what it computes (a name is truncated, and
  can list an op the kernel only reads).
- eager_kernels, eager_time_us, eager_dram_bytes: the eager kernels its torch-level ops ran
  as ("op: kernel"; "sub (add kernel): ..." where eager ran the op as another's kernel; a
  backward op also as its autograd node, ReluBackward0, the name eager's CPU profile has).
  Eager's time of an op (its kernels' time per iteration, op from the kernel name, `sub`
  through the add kernel, `linear` through addmm/mm) is shared equally among the graph's
  torch-level nodes of that op, and a node's share among the kernel calls that compute part
  of it; a node a library call computes part of (a linear whose bias add Inductor moved into
  a generated kernel) is that call's, as eager ran it as one. time_saved_us is
  eager_time_us minus time_us; bytes_saved likewise from the measured DRAM bytes (NaN
  without Nsight Compute).
- est_bytes, est_bytes_unfused: the bytes the kernel moves by the FX graph's shapes (its
  inputs from outside it and its outputs used outside it), and the same ops each as its own
  kernel (every non-view node's inputs and output): the estimate of the same bytes the cost
  model reasons with. inductor_bytes, inductor_bytes_source: Inductor's own estimate, its
  scheduler nodes' read and written bytes summed over the kernel's calls
  (analysis.run.kernel_bytes), or NaN and why (the graph came from Inductor's cache; the run
  kept no estimate; no provenance).
- launch resources and occupancy where the profile has them.

missed() - one row per pair of kernel calls the compiler left apart with a buffer between
them (the producer writes it, the consumer reads it): the buffers and their bytes (FX
shapes), the reason (Inductor's "cannot fuse" line for the pair where its fusion log has
one; an extern kernel is a library call Inductor fuses nothing into; otherwise the log's
silence, said as such), and time_cost_us = 2 x bytes / copy bandwidth (written, then read
back); `chain` numbers the runs of kernel calls joined by such pairs (an mlp's mm -> relu ->
mm -> relu -> mm is one chain). Graph breaks are rows of kind `graph break`: the kernel
calls either side of the boundary between two frames' graphs, with dynamo's reason
(run.json).
"""
from __future__ import annotations

import math
import re
from collections import defaultdict

import pandas as pd

from fusionlab.analysis.readers.inductor_logs import Graph, generated, kernel_of
from fusionlab.analysis.run import fusion, kernel_bytes

GRAPH_PREFIX = re.compile(r"^graph_\d+_")
VIEWS = {"view", "reshape", "_unsafe_view", "permute", "transpose", "t", "unsqueeze", "squeeze", "select",
         "slice", "expand", "as_strided", "alias", "getitem", "placeholder", "output", "unbind", "split"}
# torch-level op -> the eager kernels' ops it runs as (first present wins)
EAGER_OPS = {"linear": ("linear", "addmm", "mm", "matmul"), "matmul": ("matmul", "mm", "bmm", "addmm"),
             "addmm": ("addmm", "linear", "mm", "matmul"), "mm": ("mm", "matmul"), "bmm": ("bmm", "matmul"),
             "sub": ("sub", "add"), "rsub": ("rsub", "sub", "add"), "layer_norm": ("layer_norm", "native_layer_norm"),
             "softmax": ("softmax", "_softmax"), "relu": ("relu", "clamp_min", "threshold"),
             "scaled_dot_product_attention": ("scaled_dot_product_attention", "attention")}
RESOURCES = ["registers_per_thread", "block_threads", "grid_blocks", "static_smem_bytes", "dynamic_smem_bytes",
             "theoretical_occupancy", "occupancy_limited_by", "achieved_occupancy_pct"]
LEDGER_COLUMNS = ["kernel", "calls", "graph_kind", "fx_nodes", "aten_ops", "torch_ops", "grad_of", "ops_source",
                  "ops_by_name", "name_agrees", "name_only_ops", "eager_kernels", "eager_time_us", "time_us",
                  "time_saved_us", "eager_dram_bytes", "dram_bytes", "bytes_saved", "est_bytes", "est_bytes_unfused",
                  "inductor_bytes", "inductor_bytes_source", *RESOURCES, "graph", "full_name"]
GENERATED_PREFIXES = ("cpp_", "triton_")      # Inductor's generated kernels' names in a profile
MISSED_COLUMNS = ["kind", "producer", "consumer", "buffers", "buffer_bytes", "time_cost_us", "reason",
                  "reason_source", "producer_time_us", "consumer_time_us", "graph", "chain"]


def short(name: str) -> str:
    return GRAPH_PREFIX.sub("", str(name))


def _per_kernel(kernels: pd.DataFrame) -> dict[str, dict]:
    """Kernel name (graph prefix off) -> its row's values, summed over rows of that name."""
    out: dict[str, dict] = {}
    if kernels is None or kernels.empty:
        return out
    for r in kernels.to_dict("records"):
        k = out.setdefault(short(r["name"]), {"time_us": 0.0, "calls_per_iter": 0.0, "dram_bytes": math.nan,
                                              "full_name": r.get("full_name", r["name"]), "ops": r.get("ops")})
        k["time_us"] += float(r.get("time_per_iter_us") or 0.0)
        k["calls_per_iter"] += float(r.get("calls_per_iter") or 0.0)
        if r.get("dram_bytes") == r.get("dram_bytes") and r.get("dram_bytes") is not None:
            k["dram_bytes"] = (0.0 if k["dram_bytes"] != k["dram_bytes"] else k["dram_bytes"]) + float(r["dram_bytes"])
        for c in RESOURCES:
            k.setdefault(c, r.get(c))
    return out


def eager_ops(eager: pd.DataFrame) -> dict[str, dict]:
    """Eager op -> {time_us, dram_bytes, kernels}: eager kernels grouped by their op."""
    out: dict[str, dict] = {}
    for r in (eager.to_dict("records") if eager is not None else []):
        op = str(r.get("ops") or fusion.classify(r["name"], r.get("full_name"))[1][0]).split("+")[0]
        e = out.setdefault(op, {"time_us": 0.0, "dram_bytes": math.nan, "kernels": []})
        e["time_us"] += float(r.get("time_per_iter_us") or 0.0)
        b = r.get("dram_bytes")
        if b is not None and b == b:
            e["dram_bytes"] = (0.0 if e["dram_bytes"] != e["dram_bytes"] else e["dram_bytes"]) + float(b)
        e["kernels"].append(str(r["name"]))
    return out


def _aten(name: str | None) -> str | None:
    """'threshold_backward.default' -> 'threshold_backward'."""
    return name.split(".")[0] if name else None


def _autograd_name(g: Graph, node: str) -> str:
    """The eager autograd node a backward graph's node belongs to (ReluBackward0,
    NativeLayerNormBackward0): the forward aten op of its seq_nr, else its torch-level op."""
    m = g.meta.get(node) or {}
    fwd = [fm.get("original_aten") for fm in (g.forward.meta.values() if g.forward else ())
           if m.get("seq_nr") is not None and fm.get("seq_nr") == m["seq_nr"] and not fm.get("backward")]
    op = _aten(next(filter(None, fwd), None)) or (m.get("source_fn") or [None, ""])[1]
    return "".join(w.capitalize() for w in str(op).split("_")) + "Backward0"


def _fwd_ops(g: Graph, node: str) -> list[tuple[str, str]]:
    """(node, torch-level op) of the forward ops a backward graph's node belongs to: the
    forward graph's nodes of the same seq_nr (autograd's), else its source_fn."""
    m = g.meta.get(node) or {}
    f = g.forward
    if f is not None and m.get("seq_nr") is not None:
        same = [n for n, fm in f.meta.items() if fm.get("seq_nr") == m["seq_nr"] and not fm.get("backward")]
        found = _torch_nodes(f, same)
        if found:
            return found
    src = m.get("source_fn")
    return [(f"src:{src[0]}", src[1].lower())] if src else []


def _torch_nodes(g: Graph, post_nodes) -> list[tuple[str, str]]:
    """(node, torch-level op) the post-grad nodes came from; a post-grad node with no
    pre-grad origin stands for itself (its aten op). In a backward graph with node meta, a
    backward node stands for the aten op autograd ran (`original_aten`: threshold_backward,
    native_layer_norm_backward, mm), one per seq_nr (its key names the eager autograd node
    too: eager's CPU profile lists ReluBackward0 where the GPU's lists the aten op's kernel),
    and a forward node recomputed there for its forward op, marked `(recompute)`: eager ran
    no such kernel."""
    out = []
    for n in post_nodes:
        m = g.meta.get(n) if g.kind == "backward" else None
        aten = _aten((m or {}).get("original_aten"))
        if m and m.get("backward") and aten:
            if aten not in VIEWS and (n not in g.post or g.post[n].args):    # a constant computes nothing
                out.append((f"grad:{m.get('seq_nr')}:{aten}:{_autograd_name(g, n)}", aten))
            continue
        if m and not m.get("backward"):
            if n in g.post and g.post[n].op not in VIEWS:
                out += [(f"recompute:{k}", f"{op} (recompute)") for k, op in _fwd_ops(g, n)]
            continue
        pres = [p for p in g.post_to_pre.get(n, []) if p in g.pre] if g.pre else []
        if pres:
            out += [(f"pre:{p}", g.pre[p].op) for p in pres]
        elif n in g.post and g.post[n].op not in VIEWS:
            out.append((f"post:{n}", g.post[n].op))
    return list(dict.fromkeys(out))


def grad_of(g: Graph, post_nodes) -> list[str]:
    """The forward torch-level ops whose gradient a backward graph's nodes compute."""
    ops = []
    for n in post_nodes:
        if (g.meta.get(n) or {}).get("backward"):
            ops += [op for _, op in _fwd_ops(g, n) if op not in ops]
    return ops


def eager_share(graphs: list[Graph], eager: dict[str, dict]) -> tuple[dict, dict]:
    """(node -> (eager op, time share, bytes share), node -> number of kernel calls
    computing part of it) over all graphs of the run (module doc)."""
    users: dict[str, int] = defaultdict(int)
    op_nodes: dict[str, list[str]] = defaultdict(list)
    for gi, g in enumerate(graphs):
        seen, library = set(), set()
        for call, nodes in g.calls:
            for node, op in _torch_nodes(g, nodes):
                key = f"{gi}/{node}"
                if key in library:
                    continue
                if not generated(call):     # a library call computes the node's core (a linear's mm)
                    library.add(key)
                    users[key] = 0
                users[key] += 1
                if key not in seen:
                    seen.add(key)
                    autograd = (node.split(":")[3],) if node.startswith("grad:") else ()
                    e = next((x for x in (*EAGER_OPS.get(op, (op,)), *autograd) if x in eager), None)
                    if e:
                        op_nodes[e].append(key)
    share = {}
    for e, keys in op_nodes.items():
        for k in keys:
            share[k] = (e, eager[e]["time_us"] / len(keys), eager[e]["dram_bytes"] / len(keys))
    return share, users


def _est_bytes(g: Graph, nodes: set[str]) -> tuple[float, float]:
    """(fused, unfused) bytes of a set of post-grad nodes by the FX shapes (module doc)."""
    consumers = defaultdict(set)
    for n in g.post.values():
        for a in n.args:
            consumers[a].add(n.name)
    real = [n for n in nodes if n in g.post and g.post[n].op not in VIEWS]
    ins = {a for n in nodes if n in g.post for a in g.post[n].args if a not in nodes}
    outs = {n for n in real if not consumers[n] or consumers[n] - nodes}
    fused = _sum(g.post[a].bytes for a in ins if a in g.post) + _sum(g.post[n].bytes for n in outs)
    unfused = _sum(_sum([g.post[n].bytes, *(g.post[a].bytes for a in g.post[n].args if a in g.post)]) for n in real)
    return fused, unfused


def _sum(values) -> float:
    """Sum of the known values (a tuple-valued node has no single shape); NaN if none."""
    known = [v for v in values if v == v]
    return float(sum(known)) if known else math.nan


def ledger(kernels: pd.DataFrame, graphs: list[Graph], eager: pd.DataFrame | None) -> pd.DataFrame:
    """One row per generated kernel of the run (module doc), most eager time saved first."""
    measured, eops = _per_kernel(kernels), eager_ops(eager)
    share, users = eager_share(graphs, eops)
    library = {f"{gi}/{node}": True for gi, g in enumerate(graphs) for c, nodes in g.calls if not generated(c)
               for node, _ in _torch_nodes(g, nodes)}
    rows: dict[str, dict] = {}
    for gi, g in enumerate(graphs):
        for call, nodes in g.calls:
            if not generated(call):
                continue
            name = kernel_of(call)
            r = rows.setdefault(name, {"kernel": name, "calls": 0, "graph_kind": g.kind, "fx_nodes": [],
                                       "aten_ops": [], "torch_ops": [], "grad_of": [], "ops_source": "provenance",
                                       "eager_kernels": [], "eager_time_us": 0.0, "eager_dram_bytes": 0.0,
                                       "matched": False, "est_bytes": 0.0, "est_bytes_unfused": 0.0,
                                       "graph": g.compile_id})
            r["calls"] += 1
            r["grad_of"] += [op for op in grad_of(g, reversed(nodes)) if op not in r["grad_of"]]
            r["fx_nodes"] += [n for n in nodes if n not in r["fx_nodes"]]
            r["aten_ops"] += [g.post[n].op for n in reversed(nodes)
                              if n in g.post and g.post[n].op not in r["aten_ops"]]
            for node, op in _torch_nodes(g, reversed(nodes)):
                if op not in r["torch_ops"]:
                    r["torch_ops"].append(op)
                s = share.get(f"{gi}/{node}")
                if s and not library.get(f"{gi}/{node}"):
                    r["matched"] = True
                    r["eager_time_us"] += s[1] / users[f"{gi}/{node}"]
                    r["eager_dram_bytes"] += s[2] / users[f"{gi}/{node}"]
                    label = op if s[0] == op else f"{op} ({s[0]} kernel)"   # sub runs as the add kernel
                    r["eager_kernels"] += [f"{label}: {k}" for k in eops[s[0]]["kernels"]
                                           if f"{label}: {k}" not in r["eager_kernels"]]
            f, u = _est_bytes(g, set(nodes))
            r["est_bytes"] += f
            r["est_bytes_unfused"] += u
    for name, m in measured.items() if graphs else ():   # generated kernels no provenance mapping lists
        if name not in rows and name.startswith(GENERATED_PREFIXES):
            rows[name] = {"kernel": name, "calls": 0, "graph_kind": None, "fx_nodes": [], "aten_ops": [],
                          "torch_ops": [], "grad_of": [], "ops_source": "name", "eager_kernels": [],
                          "matched": False, "est_bytes": math.nan, "est_bytes_unfused": math.nan, "graph": None}
    inductor = kernel_bytes.kernel_bytes(graphs, kernel_of)
    out = []
    for name, r in rows.items():
        m = measured.get(name, {})
        r["inductor_bytes"], r["inductor_bytes_source"] = inductor.get(name, (math.nan, "no provenance"))
        by_name = fusion.classify(name)[1]
        computed = set(r["aten_ops"]) | set(r["torch_ops"])
        name_only = [o for o in by_name if o not in computed and not any(o in c for c in computed)]
        if r["ops_source"] == "name":        # nothing computed is known: nothing to compare
            name_only, r["calls"] = None, None
        if not r.pop("matched"):
            r["eager_time_us"] = r["eager_dram_bytes"] = math.nan
        t = m.get("time_us", math.nan)
        out.append({**r, "fx_nodes": "+".join(r["fx_nodes"]), "aten_ops": "+".join(r["aten_ops"]),
                    "torch_ops": "+".join(r["torch_ops"]), "grad_of": "+".join(r["grad_of"]),
                    "ops_by_name": "+".join(by_name),
                    "name_agrees": None if name_only is None else not name_only,
                    "name_only_ops": "+".join(name_only or []),
                    "eager_kernels": " | ".join(r["eager_kernels"]), "time_us": t,
                    "time_saved_us": r["eager_time_us"] - t, "dram_bytes": m.get("dram_bytes", math.nan),
                    "bytes_saved": r["eager_dram_bytes"] - m.get("dram_bytes", math.nan),
                    **{c: m.get(c) for c in RESOURCES}, "full_name": m.get("full_name", name)})
    df = pd.DataFrame(out, columns=LEDGER_COLUMNS)
    return df.sort_values("time_saved_us", ascending=False, na_position="last", ignore_index=True, kind="stable")


def _scheduler_calls(g: Graph) -> dict[str, set[int]]:
    """Scheduler node name ('op3') -> the call indices it became: a node's origins against
    each call's post-grad nodes; extern nodes in order onto extern calls in order."""
    out: dict[str, set[int]] = {}
    externs = [i for i, (c, _) in enumerate(g.calls) if not generated(c)]
    for log in g.fusion:
        for name, origins in log.origins.items():
            best = max(((len(set(origins) & set(nodes)), i) for i, (c, nodes) in enumerate(g.calls) if generated(c)),
                       default=(0, None))
            if best[0]:
                out[name] = {best[1]}
        for name, i in zip(log.externs, externs):
            out[name] = {i}
    return out


def _reasons(g: Graph) -> dict[tuple[int, int], str]:
    sched = _scheduler_calls(g)
    out = {}
    for log in g.fusion:
        for a, b, reason in log.cannot:
            ca = set().union(*(sched.get(p, set()) for p in a.split("_") if p.startswith("op")) or [set()]) \
                if a not in sched else sched[a]
            cb = set().union(*(sched.get(p, set()) for p in b.split("_") if p.startswith("op")) or [set()]) \
                if b not in sched else sched[b]
            for i in ca:
                for j in cb:
                    out[(min(i, j), max(i, j))] = reason
    return out


def _chains(pairs: list[tuple[int, int]]) -> dict[int, int]:
    """Call index -> its chain: the kernel calls joined by left-apart pairs, numbered from
    1 in the order of their first call."""
    parent: dict[int, int] = {}

    def root(x):
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    for i, j in pairs:
        parent[root(i)] = root(j)
    firsts = sorted({min(c for c in parent if root(c) == r) for r in {root(c) for c in parent}})
    number = {root(f): n + 1 for n, f in enumerate(firsts)}
    return {c: number[root(c)] for c in parent}


def _breaks(graphs: list[Graph], reasons: list[str]) -> list[dict]:
    """Graph-break rows: each boundary between graphs of different frames (compile ids
    0/0 -> 1/0), the last kernel call before it and the first after it, with dynamo's
    reason (its reasons in order where there is one per boundary, else all of them)."""
    frame = [g.compile_id.split("/")[0] for g in graphs]
    frames = [g for i, g in enumerate(graphs) if i == 0 or frame[i] != frame[i - 1]]
    pairs = [(a, b) for a, b in zip(frames, frames[1:]) if a.calls and b.calls]
    rows = []
    for k, (a, b) in enumerate(pairs or [(None, None)] * bool(reasons)):
        reason = reasons[k] if len(reasons) == len(pairs) else "; ".join(reasons)
        rows.append({"kind": "graph break", "producer": a.calls[-1][0] if a else None,
                     "consumer": b.calls[0][0] if b else None, "reason": reason, "reason_source": "dynamo",
                     "graph": f"{a.compile_id} -> {b.compile_id}" if a else None})
    return rows


def missed(kernels: pd.DataFrame, graphs: list[Graph], copy_bandwidth_Bps: float | None,
           graph_breaks: list[str] | None = None) -> pd.DataFrame:
    """The pairs of kernel calls left apart and the graph breaks (module doc), most time
    cost first."""
    measured = _per_kernel(kernels)

    def per_call_us(call):
        name = kernel_of(call)
        m = measured.get(name)
        if m is None and not generated(call):   # extern: the profile's kernels of its op
            op = name.rsplit(".", 1)[-1]
            alias = EAGER_OPS.get(op, (op,))
            hits = [v for v in measured.values() if str(v.get("ops")).split("+")[0] in alias]
            if not hits:
                return math.nan
            return sum(v["time_us"] for v in hits) / max(sum(v["calls_per_iter"] for v in hits), 1)
        return m["time_us"] / m["calls_per_iter"] if m and m["calls_per_iter"] else math.nan

    rows = []
    for g in graphs:
        producer = {}
        for i, (call, nodes) in enumerate(g.calls):
            for n in nodes:
                producer[n] = i       # the last call listing a node writes it
        reasons = _reasons(g)
        pairs: dict[tuple[int, int], list[str]] = defaultdict(list)
        for node in g.post.values():
            j = producer.get(node.name)
            for a in node.args:
                if a in g.post and not g.post[a].args and g.post[a].op != "placeholder":
                    continue      # a constant (full_default): each kernel computes it inline
                i = producer.get(a)
                if i is not None and j is not None and i != j and a not in pairs[(i, j)]:
                    pairs[(i, j)].append(a)
        chain = _chains(list(pairs))
        for (i, j), bufs in pairs.items():
            (pc, _), (cc, _) = g.calls[i], g.calls[j]
            key = (min(i, j), max(i, j))
            if key in reasons:
                reason, source = reasons[key], "fusion log"
            elif not generated(pc) or not generated(cc):
                ext = pc if not generated(pc) else cc
                reason = f"{kernel_of(ext)} is an extern (library) kernel: Inductor fuses nothing into it"
                source = "rule"
            elif g.fusion:
                reason, source = "no reason in Inductor's fusion log (not a candidate pair)", "fusion log"
            else:
                reason, source = "no fusion log (graph from Inductor's cache)", "none"
            nbytes = sum(g.post[b].bytes for b in bufs if b in g.post)
            rows.append({"kind": "left apart", "producer": pc, "consumer": cc, "buffers": "+".join(bufs),
                         "buffer_bytes": nbytes,
                         "time_cost_us": 2 * nbytes / copy_bandwidth_Bps * 1e6 if copy_bandwidth_Bps else math.nan,
                         "reason": reason, "reason_source": source, "producer_time_us": per_call_us(pc),
                         "consumer_time_us": per_call_us(cc), "graph": g.compile_id,
                         "chain": f"{g.compile_id}#{chain[i]}"})
    rows += _breaks(graphs, graph_breaks or [])
    df = pd.DataFrame(rows, columns=MISSED_COLUMNS)
    return df.sort_values(["time_cost_us", "buffer_bytes"], ascending=False, na_position="last", ignore_index=True,
                          kind="stable")
