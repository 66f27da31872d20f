"""The matmul of seed 004 (7.2.2): a dim x dim matrix times a dim x dim matrix, dims 1024
to 16384 in the seed's sweep (sizes: {matmul: {dim: [...]}}). Time is flat while the
fixed launch cost dominates, then grows as dim^3.

x = (batch, dim, dim) @ W (dim, dim), W a parameter; batch 1 is the seed's single matmul.
"""
import torch
from torch import nn

from fusionlab.experiments.registry import register_model


class Matmul(nn.Module):
    def __init__(self, dim=1024):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(dim, dim) / dim ** 0.5)

    def forward(self, x):
        return x @ self.weight


@register_model("matmul", seed="004 (7.2.2)", default_batch=1,
                description="x @ W, x = (batch, dim, dim), W = (dim, dim), dim 1024",
                sizes={"dim": (1, 65536, "rows and columns of both matrices")})
def build(batch, dtype, device, dim=1024):
    model = Matmul(dim).to(device=device, dtype=dtype)
    x = torch.randn(batch, dim, dim, device=device, dtype=dtype)
    return model, (x,)
