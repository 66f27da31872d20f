"""The deep MLP of seed 004 (7.1): num_layers x (Linear(dim, dim) -> GELU), dim 256,
4 layers, batch 256; the seed runs forward + backward of .mean() (mode train)."""
import torch
import torch.nn.functional as F
from torch import nn

from fusionlab.experiments.registry import register_model


class DeepGeluMLP(nn.Module):
    def __init__(self, dim=256, num_layers=4):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(dim, dim) for _ in range(num_layers)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
            x = F.gelu(x)
        return x

    def forward_hand(self, ops, x):
        # the matmul stays in cuBLAS; bias add and (exact, erf) GELU are one kernel
        for layer in self.layers:
            x = ops.bias_gelu(x @ layer.weight.t(), layer.bias, approximate="none")
        return x


@register_model("deep_gelu_mlp", seed="004 (7.1)", default_batch=256, tags=("hand",),
                description="4 x (Linear(256,256) -> GELU); x = (batch, 256)",
                sizes={"dim": (16, 65536, "features of every layer"), "num_layers": (1, 256, "Linear+GELU layers")})
def build(batch, dtype, device, dim=256, num_layers=4):
    model = DeepGeluMLP(dim, num_layers).to(device=device, dtype=dtype)
    x = torch.randn(batch, dim, device=device, dtype=dtype)
    return model, (x,)
