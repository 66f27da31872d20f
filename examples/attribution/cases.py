"""Hand-built validation cases of attribution (analysis.run.attribution): models whose size
axis adds one op, so that the measured change in kernel time when the op is removed can be
set against the time attributed to it (check.py; config.yaml runs them).

- chain(steps): y = x; y = y * w_i + z_i for i < steps, each step its own module `step.<i>`
  reading its own input z_i: under compile one fused pointwise kernel whose time Inductor's
  provenance splits among the steps by unfused bytes; removing the last step (steps - 1)
  saves what that step moves. Its attributed time is step.<steps-1>'s.
- matmuls(mms): x @ W_i for i < mms summed, W_i of width 4096 / 2**i: library GEMMs the
  compiled run's pool splits by FLOPs; removing the last (mms - 1) saves its GEMM and its
  share of the sum. Its attributed time is proj.<mms-1>'s."""
import torch
from torch import nn


class Step(nn.Module):
    """y * w + z: one multiply-add reading its own z."""

    def __init__(self, hidden: int):
        super().__init__()
        self.w = nn.Parameter(torch.full((hidden,), 0.5))

    def forward(self, y, z):
        return y * self.w + z


class Chain(nn.Module):
    def __init__(self, hidden: int, steps: int):
        super().__init__()
        self.step = nn.ModuleList([Step(hidden) for _ in range(steps)])

    def forward(self, x, *zs):
        y = x
        for s, z in zip(self.step, zs):
            y = s(y, z)
        return y


def chain(batch, dtype, device, steps=3, hidden=4096):
    """steps multiply-adds, each reading its own (batch, 1024, hidden) input."""
    model = Chain(hidden, steps).to(device=device, dtype=dtype)
    inputs = tuple(torch.randn(batch, 1024, hidden, device=device, dtype=dtype) for _ in range(steps + 1))
    return model, inputs


class Matmuls(nn.Module):
    def __init__(self, hidden: int, mms: int):
        super().__init__()
        self.proj = nn.ModuleList([nn.Linear(hidden, hidden // 2 ** i, bias=False) for i in range(mms)])

    def forward(self, x):
        return sum(p(x).sum(-1) for p in self.proj)


def matmuls(batch, dtype, device, mms=2, hidden=4096):
    """mms projections of x (batch, 512, hidden) to hidden / 2**i, their sums added."""
    model = Matmuls(hidden, mms).to(device=device, dtype=dtype)
    return model, (torch.randn(batch, 512, hidden, device=device, dtype=dtype),)
