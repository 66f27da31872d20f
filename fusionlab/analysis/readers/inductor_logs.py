"""Inductor's own account of a compile, as the runner keeps it (runner.introspect.CompileLogs,
an inductor/ folder beside run.json) or as TORCH_COMPILE_DEBUG leaves it:

- graph_<n>/inductor_provenance_tracking_node_mappings.json: `<backend>CodeToPost`, each
  kernel call ("cpp_fused_relu_0:2", "extern_kernels.addmm:1"; the suffix orders the
  calls) -> the post-grad FX nodes it computes; `postToPre`, post-grad -> pre-grad nodes;
- graph_<n>/fx_graph_transformed.py (post-grad graph: aten ops), pre_grad_graph.py and
  dynamo_graph.py (torch-level calls): one node a line, `name: "f32[4, 8][8, 1]cpu" = call`;
- graph_<n>/compile_id ("0/0") and fusion.log: Inductor's fusion decisions, each line led
  by the compile id of its graph;
- graph_<n>/node_meta.json and scheduler_bytes.json (the runner only, where the graph was
  lowered in the run, not taken from Inductor's cache; runner.inductor_state): per post-grad
  node its seq_nr, original_aten and torch-level source; per scheduler node after fusion
  Inductor's estimate of the bytes it reads and writes, with its origins.

A graph's kind (`forward`, `backward`, `inference`) is read off its post-grad graph's
inputs: AOTAutograd names a backward's incoming gradients `tangents_<n>` and a training
forward's inputs `primals_<n>`.

read() returns one Graph per graph folder."""
from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field

PROVENANCE = "inductor_provenance_tracking_node_mappings.json"
POST_GRAD, PRE_GRAD, DYNAMO = "fx_graph_transformed.py", "pre_grad_graph.py", "dynamo_graph.py"
FUSION_LOG = "fusion.log"
NODE_META, SCHEDULER_BYTES = "node_meta.json", "scheduler_bytes.json"

DTYPE_BYTES = {"f64": 8, "f32": 4, "f16": 2, "bf16": 2, "i64": 8, "i32": 4, "i16": 2, "i8": 1, "u8": 1,
               "b8": 1, "c64": 8, "c128": 16, "f8e4m3fn": 1, "f8e5m2": 1}
LINE = re.compile(r'^\s*(\w+)(?::\s*"([^"]*)")?\s*=\s*(.+)$')
PARAM = re.compile(r'(\w+):\s*"([^"]*)"')
TYPE = re.compile(r"^([a-z0-9]+)\[([^\]]*)\]")
CALL = re.compile(r"^([\w.]+)\(")
BINARY = {"+": "add", "-": "sub", "*": "mul", "/": "div", "@": "matmul", "//": "floordiv", "**": "pow"}
BIN = re.compile(r"^[\w.]+\s+(\*\*|//|[+\-*/@])\s+")   # x + y, 1.0 + x
IDENT = re.compile(r"\b([A-Za-z_]\w*)\b")
CANNOT = re.compile(r"^cannot fuse (\S+) with (\S+): (.*)$")
CANDIDATE = re.compile(r"^\s+(\w*SchedulerNode)\(name='([^']+)'\)(.*)$")
ORIGINS = re.compile(r"origins=OrderedSet\(\[([^\]]*)\]\)")
FOUND = re.compile(r"^found (\d+) possible fusions")
FUSING = re.compile(r"^fusing (\S+) with (\S+)$")
LOG_LINE = re.compile(r"^\[([^\]]*)\] ?(.*)$")


@dataclass
class Node:
    """One FX node: its op (aten op post-grad, the torch call before), its inputs among
    the graph's nodes, and the bytes of its output (NaN where a size is symbolic)."""
    name: str
    op: str
    args: list[str]
    dtype: str | None = None
    shape: tuple | None = None

    @property
    def bytes(self) -> float:
        if self.dtype not in DTYPE_BYTES or self.shape is None:
            return math.nan
        try:
            return float(DTYPE_BYTES[self.dtype] * math.prod(int(s) for s in self.shape))
        except ValueError:
            return math.nan


@dataclass
class FusionLog:
    """One scheduler's fusion decisions: candidates' origins (post-grad nodes) by
    scheduler name, extern kernels' names in order, "cannot fuse" pairs with reasons, the
    pairs it fused and the possible fusions found per round."""
    origins: dict[str, list[str]] = field(default_factory=dict)
    externs: list[str] = field(default_factory=list)
    cannot: list[tuple[str, str, str]] = field(default_factory=list)
    fused: list[tuple[str, str]] = field(default_factory=list)
    found: list[int] = field(default_factory=list)


@dataclass
class Graph:
    """One compiled graph: kernel calls in order as (call name, post-grad nodes), its
    post-grad and pre-grad nodes, post-grad -> pre-grad names, its compile id, and the
    fusion logs of its schedulers (none on a cache hit)."""
    folder: str
    calls: list[tuple[str, list[str]]]
    post: dict[str, Node]
    pre: dict[str, Node]
    post_to_pre: dict[str, list[str]]
    compile_id: str = "-"
    fusion: list[FusionLog] = field(default_factory=list)
    kind: str = "inference"
    meta: dict[str, dict] = field(default_factory=dict)       # node_meta.json's nodes ({} if absent)
    scheduler: list[dict] | None = None                       # scheduler_bytes.json (None if absent)
    forward: "Graph | None" = None                            # a backward's forward graph (same compile id)


def graph_kind(post: dict[str, Node]) -> str:
    """`backward`, `forward` or `inference` from the post-grad graph's inputs (module doc)."""
    inputs = [n.name for n in post.values() if n.op == "placeholder"]
    if any(n.startswith("tangents_") for n in inputs):
        return "backward"
    return "forward" if any(n.startswith("primals_") for n in inputs) else "inference"


def generated(call: str) -> bool:
    """Inductor generated this kernel call (not an extern library call)."""
    return not call.startswith(("extern_kernels.", "torch.ops.", "aten."))


def kernel_of(call: str) -> str:
    """'cpp_fused_relu_0:2' -> 'cpp_fused_relu_0'."""
    return call.rsplit(":", 1)[0]


def op_of(expr: str, post_grad: bool) -> str:
    """The op of one node's right-hand side: aten.addmm.default(..) -> addmm (post-grad);
    torch.nn.functional.layer_norm(..) -> layer_norm, x + y -> add, t[0] -> getitem."""
    m = CALL.match(expr)
    if m:
        parts = m.group(1).split(".")
        if post_grad and len(parts) >= 4 and parts[0] == "torch" and parts[1] == "ops":
            return parts[3] if parts[2] == "aten" else f"{parts[2]}.{parts[3]}"
        return parts[-1]
    b = BIN.match(expr)
    if b:
        return BINARY[b.group(1)]
    if re.match(r"^\w+\[", expr):
        return "getitem"
    if re.match(r"^-\s*\w", expr):
        return "neg"
    return "other"


def parse_type(text: str | None) -> tuple[str | None, tuple | None]:
    """'f32[4, 1024][1024, 1]cpu' -> ('f32', ('4', '1024'))."""
    m = TYPE.match(text or "")
    if not m:
        return None, None
    dims = tuple(d.strip() for d in m.group(2).split(",") if d.strip())
    return m.group(1), dims


def parse_graph(text: str, post_grad: bool) -> dict[str, Node]:
    """Node name -> Node of one readable FX graph (print_readable's text)."""
    nodes: dict[str, Node] = {}
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("def forward("):
            for name, typ in PARAM.findall(s):
                dtype, shape = parse_type(typ)
                nodes[name] = Node(name, "placeholder", [], dtype, shape)
            continue
        if not s or s.startswith(("#", "class ", "return")):
            continue
        m = LINE.match(line)
        if not m:
            continue
        expr = m.group(3).split(";  ")[0]
        dtype, shape = parse_type(m.group(2))
        args = [a for a in IDENT.findall(expr.split("(", 1)[-1]) if a in nodes]
        nodes[m.group(1)] = Node(m.group(1), op_of(expr, post_grad), args, dtype, shape)
    return nodes


def parse_fusion_log(lines) -> dict[str, list[FusionLog]]:
    """Compile id -> its schedulers' FusionLogs, in order (a scheduler starts at
    'attempting fusion (1/'; a graph without one had nothing to schedule or came from the
    cache)."""
    out: dict[str, list[FusionLog]] = {}
    for raw in lines:
        m = LOG_LINE.match(raw.rstrip("\n"))
        cid, msg = (m.group(1), m.group(2)) if m else ("-", raw.rstrip("\n"))
        logs = out.setdefault(cid, [])
        if msg.startswith("===== attempting fusion (1/") or not logs:
            logs.append(FusionLog())
        log = logs[-1]
        if c := CANDIDATE.match(msg):
            kind, name, rest = c.groups()
            if kind.startswith("Extern") and name not in log.externs:
                log.externs.append(name)
            o = ORIGINS.search(rest)
            if o:
                log.origins[name] = [x.strip() for x in o.group(1).split(",") if x.strip()]
        elif c := CANNOT.match(msg):
            log.cannot.append(c.groups())
        elif c := FUSING.match(msg):
            log.fused.append(c.groups())
        elif c := FOUND.match(msg):
            log.found.append(int(c.group(1)))
    return out


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def _json(path: str):
    try:
        return json.loads(_read(path) or "null")
    except ValueError:
        return None


def read(directory: str | None) -> list[Graph]:
    """Every graph under directory (module doc) that has a provenance mapping, in folder
    order; [] where there is none."""
    if not directory or not os.path.isdir(directory):
        return []
    graphs, logs = [], {}
    for dirpath, dirs, files in sorted(os.walk(directory)):
        dirs.sort()
        if FUSION_LOG in files:
            for cid, found in parse_fusion_log(_read(os.path.join(dirpath, FUSION_LOG)).splitlines()).items():
                logs.setdefault(cid, []).extend(found)
        if PROVENANCE not in files:
            continue
        try:
            mapping = json.loads(_read(os.path.join(dirpath, PROVENANCE)) or "{}")
        except ValueError:
            continue
        calls = []
        for key, table in mapping.items():
            if key.endswith("CodeToPost") and isinstance(table, dict):
                calls += [(call, list(nodes)) for call, nodes in table.items()]
        calls.sort(key=lambda c: int(c[0].rsplit(":", 1)[1]) if c[0].rsplit(":", 1)[-1].isdigit() else 0)
        pre_text = _read(os.path.join(dirpath, PRE_GRAD)) or _read(os.path.join(dirpath, DYNAMO))
        post = parse_graph(_read(os.path.join(dirpath, POST_GRAD)), True)
        meta = _json(os.path.join(dirpath, NODE_META)) or {}
        sched = _json(os.path.join(dirpath, SCHEDULER_BYTES))
        graphs.append(Graph(dirpath, calls, post, parse_graph(pre_text, False), mapping.get("postToPre") or {},
                            _read(os.path.join(dirpath, "compile_id")).strip() or "-", kind=graph_kind(post),
                            meta=meta.get("nodes") or {}, scheduler=sched if isinstance(sched, list) else None))
    by_id: dict[str, list[Graph]] = {}
    for g in graphs:
        by_id.setdefault(g.compile_id, []).append(g)
        if g.kind == "backward":
            g.forward = next((f for f in reversed(by_id[g.compile_id][:-1]) if f.kind == "forward"), None)
    for cid, gs in by_id.items():   # a compile id's schedulers in graph order (forward, backward)
        found = [f for f in logs.get(cid, []) if f.origins or f.externs]
        if len(found) == len(gs):
            for g, f in zip(gs, found):
                g.fusion = [f]
        elif len(gs) == 1:
            gs[0].fusion = found
    return graphs
