import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def build(batch, dtype, device, dim=1024):
    """RMSNorm over dim features; x = (batch, dim)"""
    return RMSNorm(dim).to(device=device, dtype=dtype), (torch.randn(batch, dim, device=device, dtype=dtype),)


def broken(batch, dtype, device):
    return RMSNorm(8)


def not_a_module(batch, dtype, device):
    return "model", (torch.zeros(batch),)


def shape_mismatch(batch, dtype, device):
    return nn.Linear(4, 4), (torch.zeros(batch, 5),)
