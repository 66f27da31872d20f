"""GELU (tanh approximation) written out in PyTorch ops, seed 004 (7.4.1, manual_gelu):
0.5 * x * (1 + tanh(0.79788456 * (x + 0.044715 * x^3))) on a 16384 x 16384 fp32 tensor.

The seed times five implementations (A100): this manual form (8.1 ms), F.gelu with
approximate="tanh" (1.1 ms; variant aten_op), a CUDA kernel (1.8 ms; cuda_seed), a Triton
kernel (1.85 ms; triton_seed) and torch.compile of the manual form (1.47 ms; compile).
The batch axis scales the rows: batch 16384 is the seed's size.
"""
import torch
from torch import nn

from fusionlab.experiments.registry import register_model


class ManualGelu(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1 + torch.tanh(0.79788456 * (x + 0.044715 * x * x * x)))

    def forward_hand(self, ops, x):
        return ops.gelu(x, approximate="tanh")


@register_model("gelu", seed="004 (7.4)", default_batch=16384, modes=("inference",),
                tags=("gelu_tanh", "hand", "library_op"),
                description="manual tanh-GELU, 0.5x(1+tanh(0.798(x+0.0447x^3))); x = (batch, 16384)",
                sizes={"dim": (1, 1 << 24, "features per row")})
def build(batch, dtype, device, dim=16384):
    x = torch.randn(batch, dim, device=device, dtype=dtype)
    return ManualGelu(), (x,)
