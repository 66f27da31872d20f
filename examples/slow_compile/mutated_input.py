"""Slower compiled for one cause under reduce-overhead, CUDA graphs skipped: forward
adds into its input in place, a mutated input Inductor's CUDA graph trees do not take
("skipping cudagraphs due to mutated inputs"), so the compiled model launches every
kernel itself through its wrapper, on a model of a few small kernels whose host launch
path is the iteration.

    import_models:
      gap_mutated_input: examples/slow_compile/mutated_input.py:build"""
import torch
from torch import nn

VARIANT = "compile_reduce_overhead"      # the variant the cause is of
EXPECTED = ("cudagraph_skipped",)


class MutatingBlocks(nn.Module):
    """x clamped to [-3, 3] in place, then `layers` x (linear -> layer norm -> relu)."""

    def __init__(self, hidden: int, layers: int):
        super().__init__()
        self.blocks = nn.ModuleList(nn.Sequential(nn.Linear(hidden, hidden), nn.LayerNorm(hidden), nn.ReLU())
                                    for _ in range(layers))

    def forward(self, x):
        x.clamp_(-3.0, 3.0)      # the mutated input (clamping twice changes nothing: every call sees the same x)
        for b in self.blocks:
            x = b(x)
        return x


def build(batch, dtype, device, hidden=128, layers=2):
    """x.clamp_(-3, 3) in place, then 2 x (Linear -> LayerNorm -> ReLU); x = (batch, hidden)."""
    model = MutatingBlocks(hidden, layers).to(device=device, dtype=dtype)
    return model, (torch.randn(batch, hidden, device=device, dtype=dtype),)
