"""ViT-B/16 (timm vit_base_patch16_224, random weights); input (batch, 3, 224, 224) images;
output the 1000 class logits."""
import torch


def build(batch, dtype, device):
    """ViT-B/16 at 224x224, timm; x = (batch, 3, 224, 224)"""
    import timm
    model = timm.create_model("vit_base_patch16_224", pretrained=False).to(device=device, dtype=dtype)
    return model, (torch.randn(batch, 3, 224, 224, device=device, dtype=dtype),)
