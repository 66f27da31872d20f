"""Slower compiled for one cause, a graph break: forward reads a value back with
Tensor.item() (Dynamo cannot trace it without capture_scalar_outputs), so the compiled
model is two graphs with the eager code between them, each graph with its own guards
and wrapper, on a model small enough that this host work is the iteration.

    import_models:
      gap_graph_break: examples/slow_compile/graph_break.py:build"""
import torch
from torch import nn

VARIANT = "compile"      # the variant the cause is of
EXPECTED = ("graph_breaks",)


class ScaleByMean(nn.Module):
    """x -> linear -> relu, scaled by its mean read as a Python float, -> linear."""

    def __init__(self, hidden: int):
        super().__init__()
        self.a = nn.Linear(hidden, hidden)
        self.b = nn.Linear(hidden, hidden)

    def forward(self, x):
        h = torch.relu(self.a(x))
        scale = float(h.mean().item()) + 1.0      # the graph break
        return self.b(h * scale).tanh()


def build(batch, dtype, device, hidden=256):
    """Linear -> ReLU -> .item() scale -> Linear -> tanh; x = (batch, hidden)."""
    model = ScaleByMean(hidden).to(device=device, dtype=dtype)
    return model, (torch.randn(batch, hidden, device=device, dtype=dtype),)
