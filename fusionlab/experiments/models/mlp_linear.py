"""The MLP of seed 000, code 8.2: code 8.1 with nn.Linear (matmul + bias already fused
into one addmm per layer), feature=1, hidden=64, batch 128."""
import torch
import torch.nn.functional as F
from torch import nn

from fusionlab.experiments.registry import register_model


class MLPLinear(nn.Module):
    def __init__(self, feature=1, hidden=64):
        super().__init__()
        self.fc1 = nn.Linear(feature, hidden)
        self.fc2 = nn.Linear(hidden, 1)

    def forward(self, x):
        x = self.fc1(x)
        x = F.relu(x)
        x = self.fc2(x)
        return x


@register_model("mlp_linear", seed="000 (code 8.2)", default_batch=128,
                description="code 8.1 with nn.Linear: fc1(1->64), relu, fc2(64->1); x = (batch, 1)",
                sizes={"hidden": (1, 65536, "width of the hidden layers")})
def build(batch, dtype, device, feature=1, hidden=64):
    model = MLPLinear(feature, hidden).to(device=device, dtype=dtype)
    x = torch.randn(batch, feature, device=device, dtype=dtype)
    return model, (x,)
