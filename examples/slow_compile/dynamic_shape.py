"""Slower compiled for one cause, dynamic shapes: compiled with dynamic=True, every
size is a symbol, so the guards check them and the kernels take them as arguments,
on a model small enough that this host work is the iteration.

    import_models:
      gap_dynamic_shape: examples/slow_compile/dynamic_shape.py:build"""
import torch
from torch import nn

VARIANT = "compile_dynamic"      # the variant the cause is of
EXPECTED = ("guards", "wrapper")   # symbolic sizes: checked by the guards, computed by the wrapper


class NormGelu(nn.Module):
    """layer norm -> gelu -> x * sigmoid(x) over (batch, seq, hidden)."""

    def __init__(self, hidden: int):
        super().__init__()
        self.norm = nn.LayerNorm(hidden)

    def forward(self, x):
        h = nn.functional.gelu(self.norm(x))
        return h * torch.sigmoid(h)


def build(batch, dtype, device, seq=16, hidden=64):
    """LayerNorm -> GELU -> x * sigmoid(x); x = (batch, seq, hidden)."""
    model = NormGelu(hidden).to(device=device, dtype=dtype)
    return model, (torch.randn(batch, seq, hidden, device=device, dtype=dtype),)
