"""Slower compiled for one cause, the compiled wrapper: one small elementwise op, one
kernel in eager and one compiled, so Dynamo's guards and the compiled graph's wrapper
are all the difference.

    import_models:
      gap_tiny_wrapper: examples/slow_compile/tiny_wrapper.py:build"""
import torch
from torch import nn

VARIANT = "compile"      # the variant the cause is of
EXPECTED = ("wrapper",)


class AddOne(nn.Module):
    """x + 1."""

    def forward(self, x):
        return x + 1.0


def build(batch, dtype, device, hidden=64):
    """x + 1; x = (batch, hidden)."""
    return AddOne().to(device=device), (torch.randn(batch, hidden, device=device, dtype=dtype),)
