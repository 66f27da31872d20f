"""Reduction fusion, seed 001 (5.2): y = (x * 2 + 1).sum(dim=1) on x = (1024, 1024);
mul, add and sum become one reduction kernel (Inductor: triton_per/red_fused_...)."""
import torch
from torch import nn

from fusionlab.experiments.registry import register_model


class MulAddSum(nn.Module):
    def forward(self, x):
        return (x * 2 + 1).sum(dim=1)


@register_model("reduction", seed="001 (5.2)", default_batch=1024, modes=("inference",),
                description="(x * 2 + 1).sum(dim=1); x = (batch, 1024)",
                sizes={"dim": (1, 1 << 24, "features per row")})
def build(batch, dtype, device, dim=1024):
    x = torch.randn(batch, dim, device=device, dtype=dtype)
    return MulAddSum(), (x,)
