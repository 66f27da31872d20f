"""Conv + BatchNorm + ReLU, seed 001 section 3.2 (Conv+BN folding for inference).

The seed gives the folding, not the sizes; this uses the convolution of seed 003
(Conv2d(32, 64, 3, padding=1) on N x 32 x 56 x 56) followed by BatchNorm2d(64) and ReLU.
BatchNorm's running statistics are set to non-trivial values so that folding them into
the convolution is a real change (fresh statistics are mean 0, variance 1).
"""
import torch
from torch import nn

from fusionlab.experiments.registry import register_model


class ConvBnRelu(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(32, 64, kernel_size=3, padding=1)
        self.bn = nn.BatchNorm2d(64)
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.relu(self.bn(self.conv(x)))


@register_model("conv_bn_relu", seed="001 (3.2)", default_batch=64, tags=("conv_bn",),
                description="Conv2d(32,64,3,pad 1) -> BatchNorm2d(64) -> ReLU; x = (batch, 32, 56, 56)")
def build(batch, dtype, device):
    model = ConvBnRelu()
    with torch.no_grad():
        model.bn.running_mean.uniform_(-0.5, 0.5)
        model.bn.running_var.uniform_(0.5, 2.0)
        model.bn.weight.uniform_(0.5, 1.5)
        model.bn.bias.uniform_(-0.5, 0.5)
    model = model.to(device=device, dtype=dtype)
    x = torch.randn(batch, 32, 56, 56, device=device, dtype=dtype)
    return model, (x,)
