"""What each Inductor kernel fuses, from Inductor's own provenance output rather than its
kernel name.

The runner keeps Inductor's provenance for every compiled run in inductor/ beside run.json
(runner.introspect.CompileLogs, provenance_tracking_level 1, torch >= 2.8; docs/ledger.md);
with TORCH_COMPILE_DEBUG=1 (the run's `compile_debug`) every compiled graph's debug folder
holds the same files. Each graph folder holds
- inductor_provenance_tracking_node_mappings.json: `<backend>CodeToPost` maps each
  generated kernel ("triton_poi_fused_add_relu_0:3", "cpp_fused_..._0:1"; the suffix is the
  kernel's index) to the post-grad FX nodes it computes;
- fx_graph_transformed.py: the post-grad graph, one line per node
  (`add: "f32[..]" = torch.ops.aten.add.Tensor(mul, 1)`): node -> aten op.
kernel_ops() joins them: kernel name -> (FX nodes, aten ops). Where a run has no such
files (torch older than 2.8, results recorded without them, a variant that is not compiled), the
fusion map falls back to parsing kernel names (analysis.run.fusion); the `ops_source` column
of kernels.csv says which was used: `provenance` or `name`.
"""
from __future__ import annotations

import json
import os
import re

import pandas as pd

MAPPINGS = "inductor_provenance_tracking_node_mappings.json"
POST_GRAPH = "fx_graph_transformed.py"
# the profiler's name of a C++ kernel carries its graph: graph_0_cpp_fused_relu_0
GRAPH_PREFIX = re.compile(r"^graph_\d+_")
NODE = re.compile(r"^\s*(\w+)(?::\s*\"[^\"]*\")?\s*=\s*torch\.ops\.(\w+)\.(\w+)(?:\.\w+)?\(")


def node_ops(graph_py: str) -> dict[str, str]:
    """Post-grad FX node -> aten op name, from fx_graph_transformed.py."""
    out = {}
    with open(graph_py) as f:
        for line in f:
            m = NODE.match(line)
            if m:
                out[m.group(1)] = m.group(3) if m.group(2) == "aten" else f"{m.group(2)}.{m.group(3)}"
    return out


def kernel_ops(debug_dir: str | None) -> dict[str, dict]:
    """Kernel name -> {"nodes": [...], "ops": [...]} from every compiled graph under
    debug_dir (empty where there is no provenance output)."""
    out: dict[str, dict] = {}
    if not debug_dir or not os.path.isdir(debug_dir):
        return out
    for dirpath, _, files in os.walk(debug_dir):
        if MAPPINGS not in files:
            continue
        try:
            with open(os.path.join(dirpath, MAPPINGS)) as f:
                m = json.load(f)
        except (OSError, ValueError):
            continue
        ops = node_ops(os.path.join(dirpath, POST_GRAPH)) if POST_GRAPH in files else {}
        for key, table in m.items():
            if not key.endswith("CodeToPost") or not isinstance(table, dict):
                continue
            for kernel, nodes in table.items():
                rec = out.setdefault(kernel.split(":", 1)[0], {"nodes": [], "ops": []})
                for n in reversed(nodes):          # Inductor lists a kernel's nodes last first
                    if n not in rec["nodes"]:
                        rec["nodes"].append(n)
                    if n in ops and ops[n] not in rec["ops"]:
                        rec["ops"].append(ops[n])
    return out


def annotate(kernels: pd.DataFrame, mapping: dict[str, dict]) -> pd.DataFrame:
    """Kernels annotated by analysis.run.fusion.annotate, with ops/n_ops from provenance where
    the kernel is in mapping, fx_nodes, and ops_source (`provenance` or `name`)."""
    k = kernels.copy()
    k["ops_source"] = "name"
    k["fx_nodes"] = None
    if k.empty or not mapping or "name" not in k:
        return k
    for i, name in k["name"].items():
        rec = mapping.get(str(name)) or mapping.get(GRAPH_PREFIX.sub("", str(name)))
        if rec and rec["ops"]:
            k.at[i, "ops"] = "+".join(rec["ops"])
            k.at[i, "n_ops"] = len(rec["ops"])
            k.at[i, "fx_nodes"] = "+".join(rec["nodes"])
            k.at[i, "ops_source"] = "provenance"
    return k
