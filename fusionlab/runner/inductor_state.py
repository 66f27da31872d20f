"""What Inductor holds about a graph while it compiles it and that its structured trace
does not carry, read in process by runner.introspect.CompileLogs at the moment Inductor
emits the graph's provenance artifact (inside its graph handler, after code generation):

- node_meta(): per post-grad FX node, the FX meta that ties a backward node to the forward
  op it differentiates: `seq_nr` (autograd's sequence number, shared by a forward op and
  the backward nodes of its derivative), `original_aten` (the aten op the node came from
  before decomposition: threshold_backward, native_layer_norm_backward, mm), `backward`
  (partitioner_tag is_backward) and `source_fn` (the torch-level call: the node's own
  source_fn_stack in a forward graph, fwd_source_fn_stack, copied from the forward node of
  the same seq_nr, in a backward graph), as [name, target]; `module`, the innermost entry
  of its nn_module_stack (fwd_nn_module_stack in a backward graph) as dynamo spells it
  ("L['self'].encoder.layer.0"), and `source`, the innermost frame of its stack_trace
  ("file:line"), where the node has them (analysis.run.attribution_split reads both).
- scheduler_bytes(): per scheduler node after fusion, Inductor's own estimate of the bytes
  it reads and writes (BaseSchedulerNode.get_read_write_buffers_sizes: each buffer's
  accesses, capped at the buffer's size, buffers a fused node keeps inside it left out;
  the estimate Inductor's cost model and its `inductor_metrics` graph log use), with its
  class and the post-grad FX nodes it came from (origins), so that the analysis can match
  it to the kernel calls of the provenance mapping.

Both are read only: nothing here changes the compile. On a graph from Inductor's FX graph
cache nothing is lowered or scheduled, and both are absent (None).
"""
from __future__ import annotations

import re


def current_graph():
    """The GraphLowering Inductor is compiling now, or None (a cache hit, or no graph)."""
    try:
        from torch._inductor.graph import GraphLowering
        from torch._inductor.virtualized import V
        g = V.graph
    except Exception:    # an unset virtualized global, an older torch
        return None
    return g if isinstance(g, GraphLowering) else None


def _name(x) -> str:
    return str(getattr(x, "__name__", None) or x)


STACK_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def innermost_module(stack) -> str | None:
    """The innermost module path of an nn_module_stack ({key: (path, type)}, outermost first)."""
    if not isinstance(stack, dict) or not stack:
        return None
    last = list(stack.values())[-1]
    return str(last[0]) if isinstance(last, (tuple, list)) and last else None


def innermost_frame(stack_trace) -> str | None:
    """'file:line' of the last frame of an FX stack_trace (traceback.format_list's text)."""
    found = STACK_FRAME.findall(stack_trace) if isinstance(stack_trace, str) else []
    return f"{found[-1][0]}:{found[-1][1]}" if found else None


def node_meta(graph) -> dict:
    """{"backward": bool, "inference": bool, "nodes": {node: meta}} of the post-grad graph
    of `graph` (a GraphLowering; module doc)."""
    nodes = {}
    for n in graph.module.graph.nodes:
        if n.op != "call_function":
            continue
        meta = n.meta
        backward = meta.get("partitioner_tag") == "is_backward"
        stack = meta.get("fwd_source_fn_stack" if backward else "source_fn_stack") or []
        src = stack[-1] if stack else None
        nodes[n.name] = {"seq_nr": meta.get("seq_nr"), "original_aten": _name(meta["original_aten"])
                         if meta.get("original_aten") is not None else None,
                         "backward": backward,
                         "source_fn": [str(src[0]), _name(src[1])] if src and len(src) == 2 else None,
                         "module": innermost_module(meta.get("fwd_nn_module_stack" if backward else "nn_module_stack")
                                                    or meta.get("nn_module_stack")),
                         "source": innermost_frame(meta.get("stack_trace"))}
    return {"backward": bool(getattr(graph, "is_backward", False)),
            "inference": bool(getattr(graph, "is_inference", False)), "nodes": nodes}


def scheduler_bytes(graph) -> list[dict]:
    """One entry per scheduler node of `graph` after fusion (module doc): name, class,
    origins (post-grad FX node names) and bytes (None where Inductor's estimate failed)."""
    out = []
    for snode in getattr(getattr(graph, "scheduler", None), "nodes", None) or []:
        origins = []
        for s in snode.get_nodes():
            for o in (getattr(s.node, "origins", None) or ()) if s.node is not None else ():
                if o.name not in origins:
                    origins.append(o.name)
        try:
            nbytes = int(snode.get_read_write_buffers_sizes())
        except Exception:
            nbytes = None
        out.append({"name": snode.get_name(), "kind": type(snode).__name__, "origins": origins, "bytes": nbytes})
    return out


def capture() -> dict | None:
    """{"node_meta": ..., "scheduler_bytes": ...} of the graph being compiled now; None
    where no graph is being lowered (a cache hit). A part that fails is None."""
    graph = current_graph()
    if graph is None:
        return None
    out = {}
    for key, fn in (("node_meta", node_meta), ("scheduler_bytes", scheduler_bytes)):
        try:
            out[key] = fn(graph)
        except Exception:    # debugging output must never fail a compile
            out[key] = None
    return out


class BackwardProvenance:
    """Lets Inductor write the kernel -> post-grad mapping of a graph compiled outside
    AOTAutograd's provenance context (the backward of a training graph, compiled lazily at
    the first backward call).

    In torch 2.13 Inductor records every kernel's post-grad nodes
    (torch._inductor.debug.set_kernel_post_grad_provenance_tracing, on whenever
    provenance_tracking_level is set), but dump_inductor_provenance_info writes them only
    while `_pre_grad_graph_id` is set, which only the forward compile's context
    (reset_provenance_globals) does: the backward's artifact comes out `{"version": 2.0}`.
    While open, a module-level `_pre_grad_graph_id` of 1 (no graph's id) makes the dump
    write the kernel -> post-grad table for the backward too, with empty pre-grad maps (a
    backward graph has no pre-grad graph). Outside that context the recorded table is one
    module-level dict that nothing resets, so it is emptied after each graph's artifact:
    each backward's mapping holds its own kernels. A forward compile runs in its own
    context and is unaffected. The mapping is part of what Inductor caches with the graph,
    so a backward taken from the cache later carries it."""

    SENTINEL = 1

    def __init__(self):
        from torch._inductor import debug
        self.debug = debug
        self.saved = None

    def __enter__(self):
        self.saved = getattr(self.debug, "_pre_grad_graph_id", None)
        if not self.saved and hasattr(self.debug, "_pre_grad_graph_id"):   # torch >= 2.8
            self.debug._pre_grad_graph_id = self.SENTINEL
        self.forget()
        return self

    def forget(self) -> None:
        """Empty the recorded kernel -> post-grad table (after a graph's artifact)."""
        try:
            self.debug._inductor_triton_kernel_to_post_grad_node_info.clear()
        except AttributeError:
            pass

    def __exit__(self, *exc):
        if getattr(self.debug, "_pre_grad_graph_id", None) == self.SENTINEL:
            self.debug._pre_grad_graph_id = self.saved
        self.forget()
        return False
