"""A model from outside the package, named in a config by file path:

    import_models:
      rmsnorm_mlp: examples/rmsnorm_mlp.py:build

An RMSNorm followed by a SwiGLU feed-forward layer with a residual connection, the shape of
one half of a Llama-style decoder block, written as plain PyTorch operators, so eager runs
each one as its own kernel and a compiler may fuse them."""
import torch
from torch import nn


class RMSNorm(nn.Module):
    """x / sqrt(mean(x^2) + eps) * weight, over the last axis."""

    def __init__(self, hidden: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x):
        x32 = x.float()
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight


class RMSNormMLP(nn.Module):
    """x + down(silu(gate(norm(x))) * up(norm(x)))."""

    def __init__(self, hidden: int, ffn: int):
        super().__init__()
        self.norm = RMSNorm(hidden)
        self.gate = nn.Linear(hidden, ffn, bias=False)
        self.up = nn.Linear(hidden, ffn, bias=False)
        self.down = nn.Linear(ffn, hidden, bias=False)

    def forward(self, x):
        h = self.norm(x)
        return x + self.down(nn.functional.silu(self.gate(h)) * self.up(h))


def build(batch, dtype, device, seq=256, hidden=1024):
    """RMSNorm + SwiGLU MLP (ffn = 8/3 hidden) with a residual; x = (batch, seq, hidden)"""
    model = RMSNormMLP(hidden, 8 * hidden // 3).to(device=device, dtype=dtype)
    return model, (torch.randn(batch, seq, hidden, device=device, dtype=dtype),)
