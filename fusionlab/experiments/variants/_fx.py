"""The FX rewrite the manual-fusion variants share: outer(inner(...)) -> one fused call."""
from __future__ import annotations

from typing import Callable

import torch.fx as fx


def rewrite_pairs(gm: fx.GraphModule, is_outer: Callable, is_inner: Callable,
                  fused_target: Callable, fused_args: Callable) -> int:
    """Replace every node `outer` with is_outer(outer) whose first argument `inner` is a
    call_function with is_inner(inner) and no other user, by one call of fused_target
    with fused_args(outer, inner). Rewrites gm in place; returns how many pairs."""
    count = 0
    for node in list(gm.graph.nodes):
        if not is_outer(node):
            continue
        inner = node.args[0]
        if not (isinstance(inner, fx.Node) and inner.op == "call_function" and is_inner(inner)
                and len(inner.users) == 1):
            continue
        with gm.graph.inserting_before(node):
            fused = gm.graph.call_function(fused_target, tuple(fused_args(node, inner)))
        node.replace_all_uses_with(fused)
        gm.graph.erase_node(node)
        gm.graph.erase_node(inner)
        count += 1
    gm.graph.lint()
    gm.recompile()
    return count
