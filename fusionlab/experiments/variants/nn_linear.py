"""Manual rewrite (seed 000, 8.1 -> 8.2): x @ W + b -> torch.addmm(b, x, W), one cuBLAS
call with the bias folded in, done as an FX pass on the traced model. The parameters
stay the model's own, so training steps update them."""
import operator

import torch
import torch.fx as fx

from fusionlab.experiments.registry import Unsupported, register_variant, requires
from fusionlab.experiments.variants._fx import rewrite_pairs

MATMUL = (operator.matmul, torch.matmul)
ADD = (operator.add, torch.add)


def matmul_bias_to_addmm(gm: fx.GraphModule) -> int:
    """Rewrite add(matmul(x, W), b) into addmm(b, x, W) in place; returns how many."""
    return rewrite_pairs(
        gm,
        is_outer=lambda n: (n.op == "call_function" and n.target in ADD and len(n.args) == 2
                            and not n.kwargs),
        is_inner=lambda n: n.target in MATMUL,
        fused_target=torch.addmm,
        fused_args=lambda add, mm: (add.args[1], *mm.args))


@register_variant("nn_linear", description="FX rewrite of x @ W + b into addmm (what nn.Linear runs)",
                  supports=requires(tag="matmul_bias"))
def apply(model, example_inputs, options):
    gm = fx.symbolic_trace(model)
    if matmul_bias_to_addmm(gm) == 0:
        raise Unsupported("no x @ W + b pattern in the traced graph")
    return gm
