"""The custom FX pass of seed 001 (9.3): relu(add(x, y)) -> fused_add_relu(x, y), with
the fused function compiled by torch.jit.script (its fuser makes add+relu one kernel on
the GPU). Matches torch.relu / F.relu / nn.ReLU after + / torch.add."""
import operator

import torch
import torch.fx as fx
import torch.nn.functional as F

from experiments.registry import Unsupported, register_variant, requires

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
    count = 0
    for node in list(gm.graph.nodes):
        if not _is_relu(gm, node):
            continue
        add = node.args[0]
        if not (isinstance(add, fx.Node) and add.op == "call_function" and add.target in ADD
                and len(add.args) == 2 and not add.kwargs and len(add.users) == 1):
            continue
        with gm.graph.inserting_after(node):
            fused = gm.graph.call_function(fused_add_relu, args=add.args)
        node.replace_all_uses_with(fused)
        gm.graph.erase_node(node)
        gm.graph.erase_node(add)
        count += 1
    gm.graph.lint()
    gm.recompile()
    return count


@register_variant("fx_add_relu", description="FX pass: relu(x + y) -> one scripted fused_add_relu call",
                  supports=requires(tag="add_relu"))
def apply(model, example_inputs, options):
    gm = fx.symbolic_trace(model)
    if fuse_add_relu(gm) == 0:
        raise Unsupported("no add -> relu pattern in the traced graph")
    return gm
