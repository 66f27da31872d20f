"""The 3-layer MLP of seed 000, exercise 1 (feature=1, hidden=1024), raw matmul + bias.

At small batch sizes its kernels are a few microseconds long, so launch overhead,
not memory traffic, decides the time: compile can lose there.
"""
import torch
from torch import nn

from fusionlab.experiments.registry import register_model


class MLP(nn.Module):
    def __init__(self, feature=1, hidden=1024):
        super().__init__()
        self.w1 = nn.Parameter(torch.randn(feature, hidden))
        self.b1 = nn.Parameter(torch.randn(hidden))
        self.w2 = nn.Parameter(torch.randn(hidden, hidden))
        self.b2 = nn.Parameter(torch.randn(hidden))
        self.w3 = nn.Parameter(torch.randn(hidden, 1))
        self.b3 = nn.Parameter(torch.randn(1))

    def forward(self, x):
        x = x @ self.w1 + self.b1
        x = torch.relu(x)
        x = x @ self.w2 + self.b2
        x = torch.relu(x)
        x = x @ self.w3 + self.b3
        return x

    def forward_hand(self, ops, x):
        x = ops.add_relu(x @ self.w1, self.b1)
        x = ops.add_relu(x @ self.w2, self.b2)
        return x @ self.w3 + self.b3


@register_model("mlp", seed="000 (exercise 1)", default_batch=128,
                tags=("matmul_bias", "add_relu", "hand"),
                description="3-layer MLP, x @ W + b with relu, feature=1, hidden=1024; x = (batch, 1)",
                sizes={"hidden": (1, 65536, "width of the hidden layers")})
def build(batch, dtype, device, feature=1, hidden=1024):
    model = MLP(feature, hidden).to(device=device, dtype=dtype)
    x = torch.randn(batch, feature, device=device, dtype=dtype)
    return model, (x,)
