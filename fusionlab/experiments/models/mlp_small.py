"""The MLP of seed 000, code 8.1: raw matmul + bias, feature=1, hidden=64, batch 128.

x @ W1 + b1 -> relu -> x @ W2 + b2: five kernels in eager (two matmuls, two adds, a
relu). Table 8.1 of the seed counts their memory accesses; nn_linear folds the adds into
addmm, fx_add_relu and the hand-written kernels fuse add+relu.
"""
import torch
from torch import nn

from fusionlab.experiments.registry import register_model


class MLPSmall(nn.Module):
    def __init__(self, feature=1, hidden=64):
        super().__init__()
        self.weight1 = nn.Parameter(torch.randn(feature, hidden))  # (F, H)
        self.bias1 = nn.Parameter(torch.randn(hidden))             # (H,)
        self.weight2 = nn.Parameter(torch.randn(hidden, 1))        # (H, 1)
        self.bias2 = nn.Parameter(torch.randn(1))                  # (1,)

    def forward(self, x):
        x = x @ self.weight1 + self.bias1
        x = torch.relu(x)
        x = x @ self.weight2 + self.bias2
        return x

    def forward_hand(self, ops, x):
        x = ops.add_relu(x @ self.weight1, self.bias1)
        return x @ self.weight2 + self.bias2


@register_model("mlp_small", seed="000 (code 8.1)", default_batch=128,
                tags=("matmul_bias", "add_relu", "hand"),
                description="2-layer MLP, x @ W + b, feature=1, hidden=64; x = (batch, 1)",
                sizes={"hidden": (1, 65536, "width of the hidden layers")})
def build(batch, dtype, device, feature=1, hidden=64):
    model = MLPSmall(feature, hidden).to(device=device, dtype=dtype)
    x = torch.randn(batch, feature, device=device, dtype=dtype)
    return model, (x,)
