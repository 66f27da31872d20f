"""A compiled run's kernel time split among the ops each kernel computes, through Inductor's
provenance (readers.inductor_logs: kernel call -> post-grad FX nodes) and each node's module
path and source line (node_meta.json: runner.inductor_state, from the node's
nn_module_stack and stack_trace; a backward node's from its forward node's).

Rules (analysis.run.attribution.RULES):
- a generated kernel's time per iteration is shared equally by its calls in the graphs
  (one kernel's calls run the same code), and a call's share among its nodes (views
  compute nothing and get none): by FLOPs among its matmul-class nodes where it has any
  (`flops`: a template's epilogue is counted as free), else by the bytes each node would
  move unfused (`bytes`: its inputs and output by the FX shapes), else equally (`equal`);
- a library kernel (a profile kernel no provenance names: cuBLAS, cuDNN, an aten fallback)
  is pooled by its class (core.kernel_class; on the CPU, where the kernel is an aten op, by
  that op where a library call names it) and the pool split among the library calls of
  that class (a matmul/convolution/attention op, or any other) by FLOPs (`library`);
  where no call of its class is found it stays unattributed (`no provenance`); cuDNN's
  layout kernels (CUDNN_LAYOUT: nchwToNhwc, nhwcToNchw, nhwcAddPadding) are pooled with the
  convolution calls (forward and backward) where the graphs have any;
A node without node meta (its graph came from Inductor's cache: nothing was lowered in the
run) is `no node meta`; one whose meta has no module stack keeps the module "" only where it
has a source line, else it is unattributed."""
from __future__ import annotations

import math
import re
from collections import defaultdict

from fusionlab.analysis.readers.inductor_logs import Graph, generated, kernel_of
from fusionlab.core import kernel_class as KC

GRAPH_PREFIX = re.compile(r"^graph_\d+_")
VIEWS = {"view", "reshape", "_unsafe_view", "permute", "transpose", "t", "unsqueeze", "squeeze", "select",
         "slice", "expand", "as_strided", "alias", "getitem", "placeholder", "output", "unbind", "split",
         "clone", "full", "empty", "empty_strided", "full_default"}
MATMUL_OPS = {"mm", "addmm", "bmm", "baddbmm", "convolution", "convolution_backward", "_scaled_mm",
              "_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
              "_scaled_dot_product_cudnn_attention", "_flash_attention_forward", "_efficient_attention_forward",
              "_scaled_dot_product_flash_attention_backward", "_scaled_dot_product_efficient_attention_backward",
              "_scaled_dot_product_cudnn_attention_backward"}
ATTENTION_OPS = {o for o in MATMUL_OPS if "attention" in o}
# cuDNN's own layout kernels (a convolution call's input and output in and out of NHWC, padded)
CUDNN_LAYOUT = re.compile(r"nchwToNhwc|nhwcToNchw|nhwcAddPadding")
CONVOLUTION = "convolution calls"   # the pool of every convolution's and its backward's library call
# dynamo's spellings of the model in nn_module_stack ("L['self'].a.b", "L__self___a_b" before 2.2 has no dots)
ROOT = re.compile(r"^(?:L\['self'\]|L\[\"self\"\]|self|L__self__)\.?")
INDEX = re.compile(r"\[(?:'|\")?([^\]'\"]+)(?:'|\")?\]")
AUTOCAST_CHILD = "inner"   # runner.experiment.Autocast's wrapper


def module_path(raw: str | None) -> str | None:
    """Dynamo's module path as a dotted path below the model: "L['self'].inner.layer[0].fc"
    -> "layer.0.fc" (the runner's autocast wrapper's `inner` dropped); None for None."""
    if raw is None:
        return None
    p = INDEX.sub(r".\1", ROOT.sub("", str(raw))).strip(".")
    if p == AUTOCAST_CHILD or p.startswith(AUTOCAST_CHILD + "."):
        p = p[len(AUTOCAST_CHILD) + 1:]
    return p


def _dims(node) -> list[int] | None:
    try:
        return [int(d) for d in node.shape] if node is not None and node.shape is not None else None
    except ValueError:
        return None


def flops(g: Graph, name: str) -> float:
    """FLOPs of a matmul-class post-grad node by its FX shapes (NaN where unknown): 2·M·N·K
    (batched: ·B), a convolution 2·out·(weight numel / out channels), attention 4·B·H·L·S·E."""
    n = g.post.get(name)
    if n is None:
        return math.nan
    out, args = _dims(n), [_dims(g.post.get(a)) for a in n.args]
    try:
        if n.op in ("mm", "addmm", "_scaled_mm", "bmm", "baddbmm"):
            a = args[-2] if n.op in ("addmm", "baddbmm") else args[0]
            return 2.0 * math.prod(out) * a[-1]
        if n.op == "convolution":
            w = args[1]
            return 2.0 * math.prod(out) * math.prod(w[1:])
        if n.op in ATTENTION_OPS:
            q, k = args[0], args[1]
            return 4.0 * math.prod(q) * k[-2] * (2.5 if "backward" in n.op else 1.0)
    except (TypeError, IndexError):
        return math.nan
    return math.nan


def unfused_bytes(g: Graph, name: str) -> float:
    """Bytes one node moves as its own kernel: its inputs and its output (FX shapes)."""
    n = g.post.get(name)
    if n is None:
        return math.nan
    known = [b for b in [n.bytes, *(g.post[a].bytes for a in n.args if a in g.post)] if b == b]
    return float(sum(known)) if known else math.nan


def split(g: Graph, nodes: list[str]) -> tuple[dict[str, float], str]:
    """(node -> weight summing to 1, rule) of one kernel call's nodes (module doc)."""
    real = [n for n in nodes if n in g.post and g.post[n].op not in VIEWS] or [n for n in nodes if n in g.post]
    if not real:
        real = list(nodes)
    mm = {n: flops(g, n) for n in real if n in g.post and g.post[n].op in MATMUL_OPS}
    mm = {n: f for n, f in mm.items() if f == f and f > 0}
    if mm:
        tot = sum(mm.values())
        return {n: f / tot for n, f in mm.items()}, "flops"
    b = {n: unfused_bytes(g, n) for n in real}
    b = {n: v for n, v in b.items() if v == v and v > 0}
    if b and len(b) == len(real):
        tot = sum(b.values())
        return {n: v / tot for n, v in b.items()}, "bytes"
    return {n: 1 / len(real) for n in real}, "equal"


def where(g: Graph, node: str) -> tuple[str | None, str]:
    """(module path or None, source line or "") of a post-grad node: its node meta, a
    backward node's missing ones from the forward graph's node of its seq_nr."""
    m = g.meta.get(node)
    if m is None:
        return None, ""
    source, module = m.get("source") or "", m.get("module")
    if (not source or module is None) and g.forward is not None and m.get("seq_nr") is not None:
        f = next((fm for fm in g.forward.meta.values() if fm.get("seq_nr") == m["seq_nr"]
                  and (fm.get("source") or fm.get("module"))), None) or {}
        source, module = source or f.get("source") or "", module if module is not None else f.get("module")
    return module_path(module), source


def _op(g: Graph, node: str) -> str:
    m = g.meta.get(node) or {}
    aten = (m.get("original_aten") or "").split(".")[0]
    return "aten::" + (aten or (g.post[node].op if node in g.post else node))


def _library_class(call: str, g: Graph, nodes: list[str]) -> str:
    ops = {g.post[n].op for n in nodes if n in g.post} | {call.split(".")[-1].split(":")[0]}
    if ops & ATTENTION_OPS or any("attention" in o for o in ops):
        return KC.ATTENTION
    return KC.MATMUL if ops & MATMUL_OPS else KC.OTHER


def _profile_class(name: str) -> str:
    """A library kernel's pool: its kernel class, or on the CPU its aten op's."""
    op = name[len("aten::"):] if name.startswith("aten::") else None
    if op is not None:
        if op in ATTENTION_OPS or "attention" in op:
            return KC.ATTENTION
        return KC.MATMUL if op in MATMUL_OPS or op in ("linear", "matmul", "conv2d", "conv1d", "conv3d") else KC.OTHER
    cls = KC.kernel_class(name)
    return cls if cls in (KC.ATTENTION, KC.MATMUL) else KC.OTHER


def _kernel_key(name: str, generated_names: set[str]) -> str | None:
    short = GRAPH_PREFIX.sub("", name)
    return short if short in generated_names else None


def _segments(order: list[tuple[Graph, str, list[str]]], names: list[str], keys: set[str]):
    """Per launch (names: one iteration's kernels in the order they ran), the generated
    call it ran (its position in `order`, every graph's calls in order) or None, and per
    run of library launches between two generated ones, (launch indices, the positions of
    the library calls between those generated calls). The i-th launch of a generated
    kernel is its i-th call (cyclically: a graph that runs again starts over)."""
    where: dict[str, list[int]] = defaultdict(list)
    for pos, (_, call, _) in enumerate(order):
        if generated(call):
            where[kernel_of(call)].append(pos)
    seen: dict[str, int] = defaultdict(int)
    anchor: list[int | None] = []
    for name in names:
        key = _kernel_key(name, keys)
        if key is None or not where.get(key):
            anchor.append(None)
            continue
        anchor.append(where[key][seen[key] % len(where[key])])
        seen[key] += 1
    library = [p for p, (_, call, _) in enumerate(order) if not generated(call)]
    segments, run, prev = [], [], -1
    for j, a in enumerate([*anchor, len(order)]):
        if j < len(names) and a is None:
            if not GRAPH_PREFIX.match(names[j]) and not names[j].startswith(("triton_", "cpp_")):
                run.append(j)
            continue
        between = [p for p in library if prev < p < a] if a > prev else \
            [p for p in library if p > prev or p < a]
        if run:
            segments.append((run, between))
        run, prev = [], (a if j < len(names) else prev)
    return anchor, segments


def listed(graphs: list[Graph]):
    """Whether a profile kernel is a generated kernel the graphs' provenance lists (a
    predicate, for analysis.run.attribution.split_loop's `keep`)."""
    keys = {kernel_of(c) for g in graphs for c, _ in g.calls if generated(c)}
    return lambda name: _kernel_key(str(name), keys) is not None


def sequence(graphs: list[Graph], launches) -> tuple[dict[int, tuple[Graph, list[str]]], dict[int, int]]:
    """({launch index: (graph, nodes) of the library call it ran}, {launch index: position
    of the generated call it ran}) from one iteration's launches in the order they ran
    (analysis.run.attribution.Measured.launches; module doc, rule `sequence`): between two
    generated kernels, each class's library launches go one to one, in order, to the
    library calls of that class between those kernels' calls, or all to the one such call;
    a launch no call takes is left out."""
    if launches is None or not len(launches):
        return {}, {}
    order = [(g, call, nodes) for g in graphs for call, nodes in g.calls]
    names = [str(n) for n in launches["name"]]
    keys = {kernel_of(c) for _, c, _ in order if generated(c)}
    anchor, segments = _segments(order, names, keys)
    placed: dict[int, tuple[Graph, list[str]]] = {}
    for run, between in segments:
        for cls in {_profile_class(names[j]) for j in run}:
            mine = [j for j in run if _profile_class(names[j]) == cls]
            calls = [p for p in between if _library_class(order[p][1], order[p][0], order[p][2]) == cls]
            if len(calls) == len(mine) or len(calls) == 1:
                for j, p in zip(mine, calls * len(mine) if len(calls) == 1 else calls):
                    placed[j] = (order[p][0], order[p][2])
    return placed, {j: a for j, a in enumerate(anchor) if a is not None}


def compiled(per_iter: dict[str, float], graphs: list[Graph], launches=None) -> list[dict]:
    """Rows (analysis.run.attribution's, without share) of a compiled run's kernels;
    launches: one iteration's, in the order they ran (Measured.launches), or None."""
    calls: dict[str, list[tuple[Graph, list[str]]]] = defaultdict(list)
    library: dict[str, list[tuple[Graph, list[str], float]]] = defaultdict(list)
    for g in graphs:
        for call, nodes in g.calls:
            if generated(call):
                calls[kernel_of(call)].append((g, nodes))
            else:
                f = sum(v for v in (flops(g, n) for n in nodes) if v == v)
                library[_library_class(call, g, nodes)].append((g, nodes, f))
                library["aten::" + call.split(":")[0].split(".")[-1]].append((g, nodes, f))
    rows: list[dict] = []

    def place(kernel: str, t: float, g: Graph, nodes: list[str], rule: str | None):
        weights, how = split(g, nodes)
        located = {n: where(g, n) for n in weights}
        located = {n: (m, src) for n, (m, src) in located.items() if m is not None or src}
        known = sum(weights[n] for n in located)
        for n, w in weights.items():
            if n in located:
                module, source = located[n]
                rows.append({"module": module or "", "source": source, "op": _op(g, n), "phase": g.kind,
                             "kernel": kernel, "time_us": t * w, "rule": rule or how})
            elif known > 0:   # made by a pass: where the call's other nodes are
                for k, (module, source) in located.items():
                    rows.append({"module": module or "", "source": source, "op": _op(g, n), "phase": g.kind,
                                 "kernel": kernel, "time_us": t * w * weights[k] / known, "rule": "inherited"})
            else:
                rows.append({"module": "(unattributed)", "source": "", "op": _op(g, n), "phase": g.kind,
                             "kernel": kernel, "time_us": t * w,
                             "rule": "no node meta" if n not in g.meta else "no module"})

    order = [(g, nodes) for g in graphs for _, nodes in g.calls]
    placed, anchors = sequence(graphs, launches)
    names = [] if launches is None else [str(n) for n in launches["name"]]
    durations = [] if launches is None else [float(d) for d in launches["duration"]]
    of_name: dict[str, list[int]] = defaultdict(list)
    for j, n in enumerate(names):
        of_name[n].append(j)
    pools: dict[str, list[tuple[str, float]]] = defaultdict(list)
    # cuDNN's layout helpers run inside a convolution's library call: pooled with those calls
    library[CONVOLUTION] = library.get("aten::convolution", []) + library.get("aten::convolution_backward", [])
    for name, t in per_iter.items():
        js = of_name.get(name, [])
        total = sum(durations[j] for j in js)

        def part(j):   # launch j's share of the kernel's time per iteration
            return t * (durations[j] / total if total else 1 / len(js))
        key = _kernel_key(name, set(calls))
        if key is not None:
            if js and all(j in anchors for j in js) and len(js) == len(calls[key]):
                for j in js:   # each call by its own launch's duration
                    place(name, part(j), *order[anchors[j]], None)
            else:
                for g, nodes in calls[key]:
                    place(name, t / len(calls[key]), g, nodes, None)
            continue
        left = t
        for j in js:
            if j in placed:
                place(name, part(j), *placed[j], "sequence")
                left -= part(j)
        if left <= 1e-9 * max(t, 1.0):
            continue
        cls = name if name in library else _profile_class(name)
        if CUDNN_LAYOUT.search(name) and library[CONVOLUTION]:
            cls = CONVOLUTION
        if name.startswith(("triton_", "cpp_")) or GRAPH_PREFIX.match(name) or not library.get(cls):
            rows.append({"module": "(unattributed)", "source": "", "op": "", "phase": "", "kernel": name,
                         "time_us": left, "rule": "no provenance"})
            continue
        pools[cls].append((name, left))
    for cls, kernels in pools.items():
        lib = library[cls]
        fl = [f for _, _, f in lib]
        tot = sum(fl)
        shares = [f / tot for f in fl] if tot > 0 else [1 / len(lib)] * len(lib)
        for name, t in kernels:
            for (g, nodes, _), s in zip(lib, shares):
                place(name, t * s, g, nodes, "library")
    return rows
