"""SimpleFusionModel, seed 003: Conv2d(32, 64, 3, padding=1) -> ReLU -> MaxPool2d(2, 2)
on (64, 32, 56, 56), eval; the seed compares eager with torch.jit.script (NNC)."""
import torch
from torch import nn

from fusionlab.experiments.registry import register_model


class ConvReluPool(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(32, 64, kernel_size=3, padding=1)
        self.relu = nn.ReLU()
        self.pool = nn.MaxPool2d(2, 2)

    def forward(self, x):
        return self.pool(self.relu(self.conv(x)))


@register_model("conv_relu_pool", seed="003", default_batch=64,
                description="Conv2d(32,64,3,pad 1) -> ReLU -> MaxPool2d(2,2); x = (batch, 32, 56, 56)")
def build(batch, dtype, device):
    model = ConvReluPool().to(device=device, dtype=dtype)
    x = torch.randn(batch, 32, 56, 56, device=device, dtype=dtype)
    return model, (x,)
