"""Inductor's own estimate of the bytes each kernel call reads and writes.

The runner keeps, for every graph Inductor lowered in the run, its scheduler nodes after
fusion with Inductor's estimate of their bytes (scheduler_bytes.json,
runner.inductor_state: BaseSchedulerNode.get_read_write_buffers_sizes, the same on the CPU
and the GPU) and the post-grad FX nodes each came from (origins). A kernel call of the
provenance mapping lists the post-grad nodes of the scheduler nodes it was generated from,
so each scheduler node is matched to the call whose nodes share the most of its origins
(a generated kernel's scheduler nodes to generated calls, an extern kernel's to extern
calls; ties to the first call). A call's estimate is the sum over its scheduler nodes: a
C++ kernel can hold several (an outer-loop fusion; CPU code generation also puts nodes
that share loops into one function), a Triton kernel holds one fused node.
"""
from __future__ import annotations

import math

from fusionlab.analysis.readers.inductor_logs import Graph, generated

SOURCE = "Inductor scheduler estimate"
FROM_CACHE = "graph from Inductor's cache: not scheduled in this run"
NOT_KEPT = "run kept no scheduler estimate"
UNMATCHED = "no scheduler node matched the kernel's FX nodes"
EXTERN = ("ExternKernelSchedulerNode",)


def call_bytes(g: Graph) -> dict[int, float]:
    """Call index -> Inductor's estimate of its bytes (module doc); calls no scheduler node
    matched are absent, and so is every call of a graph without scheduler_bytes.json."""
    out: dict[int, float] = {}
    if not g.scheduler:
        return out
    nodes = [set(n) for _, n in g.calls]
    for s in g.scheduler:
        if s.get("bytes") is None or s.get("kind") == "NopKernelSchedulerNode":
            continue
        extern = s.get("kind") in EXTERN
        origins = set(s.get("origins") or ())
        best = max(((len(origins & nodes[i]), -i) for i, (c, _) in enumerate(g.calls)
                    if generated(c) != extern), default=(0, 0))
        if best[0]:
            out[-best[1]] = out.get(-best[1], 0.0) + float(s["bytes"])
    return out


def why_missing(g: Graph) -> str:
    """Why a kernel call of g has no estimate."""
    if g.scheduler is None:
        return NOT_KEPT if g.fusion else FROM_CACHE
    return UNMATCHED


def kernel_bytes(graphs: list[Graph], kernel_of) -> dict[str, tuple[float, str]]:
    """Kernel name -> (Inductor's estimate summed over its calls in all graphs, source):
    NaN with the reason where a call of it has no estimate."""
    out: dict[str, tuple[float, str]] = {}
    for g in graphs:
        per_call = call_bytes(g)
        for i, (call, _) in enumerate(g.calls):
            name = kernel_of(call)
            total, source = out.get(name, (0.0, SOURCE))
            if i in per_call and source == SOURCE:
                out[name] = (total + per_call[i], SOURCE)
            else:
                out[name] = (math.nan, source if source != SOURCE else why_missing(g))
    return out
