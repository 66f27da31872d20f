"""Manual rewrite (seed 000, 8.1 -> 8.2): x @ W + b -> torch.addmm(b, x, W), one cuBLAS
call with the bias folded in, done as an FX pass on the traced model. The parameters
stay the model's own, so training steps update them."""
import operator

import torch
import torch.fx as fx

from experiments.registry import Unsupported, register_variant, requires

MATMUL = (operator.matmul, torch.matmul)
ADD = (operator.add, torch.add)


def matmul_bias_to_addmm(gm: fx.GraphModule) -> int:
    """Rewrite add(matmul(x, W), b) into addmm(b, x, W) in place; returns how many."""
    count = 0
    for node in list(gm.graph.nodes):
        if node.op != "call_function" or node.target not in ADD or len(node.args) != 2 or node.kwargs:
            continue
        mm, bias = node.args
        if not (isinstance(mm, fx.Node) and mm.op == "call_function" and mm.target in MATMUL
                and len(mm.users) == 1):
            continue
        with gm.graph.inserting_before(node):
            fused = gm.graph.call_function(torch.addmm, (bias, *mm.args))
        node.replace_all_uses_with(fused)
        gm.graph.erase_node(node)
        gm.graph.erase_node(mm)
        count += 1
    gm.graph.lint()
    gm.recompile()
    return count


@register_variant("nn_linear", description="FX rewrite of x @ W + b into addmm (what nn.Linear runs)",
                  supports=requires(tag="matmul_bias"))
def apply(model, example_inputs, options):
    gm = fx.symbolic_trace(model)
    if matmul_bias_to_addmm(gm) == 0:
        raise Unsupported("no x @ W + b pattern in the traced graph")
    return gm
