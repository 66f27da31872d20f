"""Slower compiled for one cause, recompiles: forward reads a Python int that changes
every call (a step counter), which Dynamo specialises on, so every call fails the
guard on it and compiles again, until Dynamo's recompile limit; from then on the frame
runs eager, after its failed cache lookup.

    import_models:
      gap_recompile_loop: examples/slow_compile/recompile_loop.py:build"""
import torch
from torch import nn

VARIANT = "compile"      # the variant the cause is of
EXPECTED = ("recompiles",)


class StepScaled(nn.Module):
    """x -> linear -> gelu, times (1 + step % 1000 / 1e6), step += 1 each call."""

    def __init__(self, hidden: int):
        super().__init__()
        self.lin = nn.Linear(hidden, hidden)
        self.step = 0

    def forward(self, x):
        self.step += 1
        return nn.functional.gelu(self.lin(x)) * (1.0 + (self.step % 1000) / 1e6)


def build(batch, dtype, device, hidden=256):
    """Linear -> GELU scaled by a per-call step count; x = (batch, hidden)."""
    model = StepScaled(hidden).to(device=device, dtype=dtype)
    return model, (torch.randn(batch, hidden, device=device, dtype=dtype),)
