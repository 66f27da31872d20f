"""MatmulHeavyModel, seed 002: 4 x (Linear(4096, 4096) + relu), compute bound.

cuBLAS already runs the matmuls at full speed, so fusion has little to gain.
"""
import torch
from torch import nn

from fusionlab.experiments.registry import register_model


class MatmulHeavyModel(nn.Module):
    def __init__(self, dim=4096, num_layers=4):
        super().__init__()
        self.linears = nn.ModuleList([nn.Linear(dim, dim) for _ in range(num_layers)])

    def forward(self, x):
        for linear in self.linears:
            x = linear(x)
            x = torch.relu(x)
        return x


@register_model("matmul_heavy", seed="002", default_batch=1024,
                description="4 x (Linear(4096,4096) + relu); x = (batch, 4096)",
                sizes={"dim": (16, 65536, "features of every Linear"), "num_layers": (1, 256)})
def build(batch, dtype, device, dim=4096, num_layers=4):
    model = MatmulHeavyModel(dim, num_layers).to(device=device, dtype=dtype)
    x = torch.randn(batch, dim, device=device, dtype=dtype)
    return model, (x,)
