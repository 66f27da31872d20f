"""The custom FX pass of seed 001 (9.3): relu(add(x, y)) -> fused_add_relu(x, y), with
the fused function compiled by torch.jit.script (its fuser makes add+relu one kernel on
the GPU). Matches torch.relu / F.relu / nn.ReLU after + / torch.add."""
import operator

import torch
import torch.fx as fx
import torch.nn.functional as F

from fusionlab.experiments.registry import Unsupported, register_variant, requires
from fusionlab.experiments.variants._fx import rewrite_pairs

ADD = (operator.add, torch.add)
RELU = (torch.relu, F.relu)


@torch.jit.script
def _scripted_add_relu(x, y):
    return torch.relu(x + y)


def fused_add_relu(x, y):
    return _scripted_add_relu(x, y)


def _is_relu(gm, node):
    if node.op == "call_function":
        return node.target in RELU and not node.kwargs.get("inplace", False)
    return node.op == "call_module" and isinstance(gm.get_submodule(node.target), torch.nn.ReLU)


def fuse_add_relu(gm: fx.GraphModule) -> int:
    """Rewrite relu(add(x, y)) into fused_add_relu(x, y) in place; returns how many."""
    return rewrite_pairs(
        gm,
        is_outer=lambda n: _is_relu(gm, n),
        is_inner=lambda n: n.target in ADD and len(n.args) == 2 and not n.kwargs,
        fused_target=fused_add_relu,
        fused_args=lambda relu, add: add.args)


@register_variant("fx_add_relu", description="FX pass: relu(x + y) -> one scripted fused_add_relu call",
                  supports=requires(tag="add_relu"))
def apply(model, example_inputs, options):
    gm = fx.symbolic_trace(model)
    if fuse_add_relu(gm) == 0:
        raise Unsupported("no add -> relu pattern in the traced graph")
    return gm
