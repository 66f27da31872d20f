"""PointwiseHeavyModel, seed 002: many elementwise ops, memory-bandwidth bound.

Eager runs one CUDA kernel per op; torch.compile fuses them into about one.
"""
import torch
from torch import nn

from fusionlab.experiments.registry import register_model


class PointwiseHeavyModel(nn.Module):
    def __init__(self, dim=4096):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        x = x * self.scale + self.bias
        x = torch.sin(x) + torch.cos(x) * torch.tanh(x)
        x = x * torch.sigmoid(x) + torch.relu(x)
        x = x / (1.0 + torch.abs(x))
        x = torch.sin(x) + torch.cos(x) * torch.tanh(x)
        x = x * torch.sigmoid(x) + torch.relu(x)
        x = x / (1.0 + torch.abs(x))
        x = torch.sin(x) + torch.cos(x) * torch.tanh(x)
        x = x * torch.sigmoid(x) + torch.relu(x)
        return x


@register_model("pointwise_heavy", seed="002", default_batch=1024,
                description="scale+bias then 3 rounds of sin/cos/tanh, sigmoid/relu, x/(1+|x|); x = (batch, 4096)",
                sizes={"dim": (1, 1 << 24, "features per row")})
def build(batch, dtype, device, dim=4096):
    model = PointwiseHeavyModel(dim).to(device=device, dtype=dtype)
    x = torch.randn(batch, dim, device=device, dtype=dtype)
    return model, (x,)
