"""LeNet-5, seed 000 exercise 2 (compile it and compare code and speed).

The seed names the model without code; this is the usual PyTorch form of LeCun et al.
(1998): conv 6@5x5 -> relu -> maxpool 2 -> conv 16@5x5 -> relu -> maxpool 2 ->
fc 400->120 -> relu -> fc 120->84 -> relu -> fc 84->10, on 1 x 32 x 32 images.
"""
import torch
import torch.nn.functional as F
from torch import nn

from fusionlab.experiments.registry import register_model


class LeNet5(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, num_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


@register_model("lenet5", seed="000 (exercise 2)", default_batch=128,
                description="LeNet-5: 2 x (conv5x5 + relu + maxpool2), fc 400-120-84-10; x = (batch, 1, 32, 32)")
def build(batch, dtype, device):
    model = LeNet5().to(device=device, dtype=dtype)
    x = torch.randn(batch, 1, 32, 32, device=device, dtype=dtype)
    return model, (x,)
