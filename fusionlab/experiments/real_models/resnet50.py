"""ResNet-50 (torchvision.models.resnet50, random weights); input (batch, 3, image, image)
images; output the 1000 class logits."""
import torch


def build(batch, dtype, device, image=224):
    """ResNet-50, torchvision; x = (batch, 3, image, image)"""
    from torchvision.models import resnet50
    model = resnet50(weights=None).to(device=device, dtype=dtype)
    return model, (torch.randn(batch, 3, image, image, device=device, dtype=dtype),)
