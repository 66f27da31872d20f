"""Softmax written out, seed 001 (5.2, softmax_fused): exp(x - max) / sum(exp(x - max))
over the last axis of (batch, 4096). Eager runs max, sub, exp, sum and div as separate
kernels; a fused kernel reads each row once and writes it once."""
import torch
from torch import nn

from fusionlab.experiments.registry import register_model


class ManualSoftmax(nn.Module):
    def forward(self, x):
        exp_x = torch.exp(x - x.max(dim=-1, keepdim=True)[0])
        return exp_x / exp_x.sum(dim=-1, keepdim=True)

    def forward_hand(self, ops, x):
        return ops.softmax(x)


@register_model("softmax", seed="001 (5.2)", default_batch=16384, modes=("inference",),
                tags=("hand", "library_op"),
                description="row softmax exp(x-max)/sum written in 5 ops; x = (batch, 4096)",
                sizes={"dim": (1, 1 << 24, "features per row")})
def build(batch, dtype, device, dim=4096):
    x = torch.randn(batch, dim, device=device, dtype=dtype)
    return ManualSoftmax(), (x,)
